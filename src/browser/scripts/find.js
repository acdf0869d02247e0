// find.js — text search and paged reading of a frame's visible text (browser_find_text, browser_read_text).
// Both read `innerText`, which is what a person sees (display:none text is left out), cleaned of lone
// surrogates. Results are bounded: at most `maxMatches` snippets, at most `maxChars` per page of text.

/**
 * @param {{query: string, maxMatches?: number, context?: number}} args
 * @returns {{matches: string[], total: number}}
 */
function keelFindText(args) {
  const query = String(args.query || '').toLowerCase();
  const maxMatches = typeof args.maxMatches === 'number' ? args.maxMatches : 20;
  const context = typeof args.context === 'number' ? args.context : 60;
  const body = document.body || document.documentElement;
  if (!query || !body) return { matches: [], total: 0 };
  const text = keelContentText(body);
  const lower = text.toLowerCase();
  /** @type {string[]} */
  const matches = [];
  let total = 0;
  for (let at = lower.indexOf(query); at >= 0; at = lower.indexOf(query, at + query.length)) {
    ++total;
    if (matches.length < maxMatches) {
      const start = Math.max(0, at - context);
      const end = Math.min(text.length, at + query.length + context);
      const snippet = keelCleanText(text.slice(start, end), 2 * context + query.length + 2);
      matches.push((start > 0 ? '…' : '') + snippet + (end < text.length ? '…' : ''));
    }
  }
  return { matches, total };
}

/**
 * One page of the frame's visible text.
 * @param {{offset?: number, maxChars?: number}} args
 * @returns {{text: string, offset: number, nextOffset: number | null, total: number}}
 */
function keelReadText(args) {
  const body = document.body || document.documentElement;
  const all = body ? keelContentText(body).replace(/[ \t]+/g, ' ').replace(/\n\s*\n+/g, '\n\n').trim() : '';
  const offset = Math.max(0, Math.min(typeof args.offset === 'number' ? args.offset : 0, all.length));
  const maxChars = typeof args.maxChars === 'number' ? args.maxChars : 8000;
  const end = Math.min(all.length, offset + maxChars);
  return { text: all.slice(offset, end).toWellFormed(), offset, nextOffset: end < all.length ? end : null,
           total: all.length };
}

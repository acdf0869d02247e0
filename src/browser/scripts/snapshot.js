// snapshot.js — the page outline keel shows the model: one frame's composed tree (open shadow roots, slot
// assignment) as indented lines, with refs for what can be clicked, typed into or chosen.
//
// Line format (docs/browser.md "Page scripts, snapshot and refs"): the ref first ("e12 button "Buy""), one
// space of indent per structural level, list items marked "- " (the marker counts as two columns of indent),
// no generic wrappers, link targets after "→", text runs unquoted and merged, states in brackets. Invisible
// subtrees (display:none, content-visibility, aria-hidden) are skipped. The walk stops at `maxNodes` elements
// or after `budgetMs` and says so; keel bounds the text it shows, this script bounds the work.
// Child frames are not entered: keel snapshots each frame in its own world and splices the outlines under the
// iframe lines listed in `iframes`.

/**
 * @typedef {{nextIndex?: number, refPrefix?: string, maxNodes?: number, budgetMs?: number}} KeelSnapshotOptions
 * @typedef {{index: number, role: string, name: string, line: number, rect: number[], inViewport: boolean}} KeelRef
 */

/** Elements that are never content. */
const KEEL_SKIPPED_TAGS = new Set([
  'SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE', 'BASE', 'PARAM', 'SOURCE',
  'TRACK', 'DATALIST',
]);

/** Elements that end a text run: text on either side of them is on its own line. */
const KEEL_BLOCK_TAGS = new Set([
  'ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'BR', 'DD', 'DIV', 'DL', 'DT', 'FIELDSET', 'FIGCAPTION',
  'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI', 'MAIN', 'NAV', 'OL',
  'P', 'PRE', 'SECTION', 'TABLE', 'TBODY', 'TD', 'TFOOT', 'TH', 'THEAD', 'TR', 'UL', 'CAPTION', 'DETAILS',
  'SUMMARY', 'DIALOG', 'LEGEND', 'BODY',
]);

/** Longest text run on one line, in characters (browser_read_text gives the full text). */
const KEEL_TEXT_CAP = 200;

/** Most options listed after a select's value. */
const KEEL_OPTION_CAP = 10;

/**
 * The children of `node` in the composed tree: an open shadow root's children instead of the light DOM, a
 * slot's assigned nodes instead of its fallback content.
 * @param {Node} node
 * @returns {ArrayLike<Node>}
 */
function keelComposedChildren(node) {
  if (node instanceof Element && node.shadowRoot) return node.shadowRoot.childNodes;
  if (node instanceof HTMLSlotElement) {
    const assigned = node.assignedNodes({ flatten: true });
    if (assigned.length > 0) return assigned;
  }
  return node.childNodes;
}

/**
 * @param {string} text
 * @returns {string} the text with its double quotes escaped, for a quoted name or value
 */
function keelQuote(text) {
  return '"' + text.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
}

class KeelOutlineWriter {
  /** @param {KeelSnapshotOptions} opts */
  constructor(opts) {
    /** @type {string[]} */ this.lines = [];
    /** @type {string[]} */ this.view = [];
    /** @type {KeelRef[]} */ this.refs = [];
    /** @type {{index: number, line: number}[]} */ this.iframes = [];
    this.prefix = typeof opts.refPrefix === 'string' ? opts.refPrefix : 'e';
    this.nextIndex = typeof opts.nextIndex === 'number' ? opts.nextIndex : 1;
    this.maxNodes = typeof opts.maxNodes === 'number' ? opts.maxNodes : 200000;
    this.started = performance.now();
    this.deadline = this.started + (typeof opts.budgetMs === 'number' ? opts.budgetMs : 2000);
    this.nodes = 0;
    this.truncatedReason = '';
    /** Marker for the next line ("- " for the first line of a list item). */
    this.marker = '';
    /** @type {string[]} */ this.text = [];
    this.textDepth = 0;
    /** @type {Element | null} */ this.textOwner = null;
    /** @type {Map<Element, boolean>} */ this.inViewCache = new Map();
    /** Inside a label of a shown control: its text is that control's name already. */
    this.labelDepth = 0;
    /** The last line if it is a text run (to drop it when the next ref is named by it), else ''. */
    this.lastText = '';
  }

  /** @returns {boolean} whether the walk must stop (node or time budget spent) */
  spent() {
    if (this.truncatedReason) return true;
    if (this.nodes > this.maxNodes) {
      this.truncatedReason = `stopped after ${this.maxNodes} elements`;
    } else if ((this.nodes & 255) === 0 && performance.now() > this.deadline) {
      this.truncatedReason = `stopped after ${Math.round(this.deadline - this.started)} ms`;
    }
    return this.truncatedReason !== '';
  }

  /**
   * @param {Element} el
   * @returns {boolean}
   */
  inView(el) {
    let known = this.inViewCache.get(el);
    if (known === undefined) {
      known = keelInViewport(keelRect(el));
      this.inViewCache.set(el, known);
    }
    return known;
  }

  /**
   * @param {number} depth
   * @param {string} text
   * @param {boolean} inView
   * @returns {number} the line's index
   */
  push(depth, text, inView) {
    this.lastText = '';
    const indent = this.marker ? ' '.repeat(Math.max(0, depth - 2)) + this.marker : ' '.repeat(depth);
    this.marker = '';
    this.lines.push(indent + text);
    this.view.push(inView ? '1' : '0');
    return this.lines.length - 1;
  }

  /**
   * @param {Node} node the text node
   * @param {number} depth
   */
  addText(node, depth) {
    if (this.labelDepth > 0) return;
    const value = node.nodeValue;
    if (!value || !/\S/.test(value)) return;
    if (this.text.length > 0 && this.textDepth !== depth) this.flushText();
    if (this.text.length === 0) {
      this.textDepth = depth;
      this.textOwner = node.parentElement;
    }
    this.text.push(value);
  }

  flushText() {
    if (this.text.length === 0) return;
    const text = keelCleanText(this.text.join(' '), KEEL_TEXT_CAP);
    const owner = this.textOwner;
    this.text = [];
    this.textOwner = null;
    if (text) {
      this.push(this.textDepth, text, owner ? this.inView(owner) : false);
      this.lastText = text;
    }
  }

  /**
   * @param {Element} el
   * @param {number} depth
   * @param {string} role
   * @returns {number} the ref's index
   */
  addRef(el, depth, role) {
    this.flushText();
    const name = keelAccessibleName(el, role);
    // A text run just before a control that it names (a label by aria-labelledby) says nothing new.
    if (name && this.lastText === name && !this.marker) {
      this.lines.pop();
      this.view.pop();
    }
    const index = keelRegister(el, role, name, this.nextIndex);
    let line = this.prefix + index + ' ' + role;
    if (name) line += ' ' + keelQuote(name);
    const value = keelValue(el, role);
    if (value !== null && value !== name) line += ' = ' + keelQuote(value);
    if (el.tagName === 'SELECT') {
      const options = Array.from(/** @type {HTMLSelectElement} */ (el).options);
      const shown = options.slice(0, KEEL_OPTION_CAP).map((o) => keelCleanText(o.label || o.text));
      if (options.length > KEEL_OPTION_CAP) shown.push(`… ${options.length - KEEL_OPTION_CAP} more`);
      if (shown.length > 0) line += ' (' + shown.join(', ') + ')';
    }
    if (role === 'link') {
      const target = keelLinkTarget(el);
      if (target && target !== name) line += ' → ' + target;
    }
    if (role === 'iframe') {
      const src = /** @type {HTMLIFrameElement} */ (el).src;
      if (src) line += ' ' + keelCleanText(src, 60);
    }
    const states = keelStates(el, role);
    if (states.length > 0) line += ' [' + states.join(', ') + ']';
    const rect = keelRect(el);
    const inViewport = keelInViewport(rect);
    this.inViewCache.set(el, inViewport);
    const lineIndex = this.push(depth, line, inViewport);
    this.refs.push({ index, role, name, line: lineIndex, rect, inViewport });
    if (role === 'iframe') this.iframes.push({ index, line: lineIndex });
    return index;
  }

  /**
   * Walks `parent`'s composed children at `depth`.
   * @param {Node} parent
   * @param {number} depth
   */
  walkChildren(parent, depth) {
    const children = keelComposedChildren(parent);
    for (let i = 0; i < children.length; ++i) {
      if (this.truncatedReason) return;
      const child = children[i];
      if (child.nodeType === Node.TEXT_NODE) {
        this.addText(child, depth);
      } else if (child instanceof Element) {
        this.walkElement(child, depth);
      }
    }
  }

  /**
   * @param {Element} el
   * @param {number} depth
   */
  walkElement(el, depth) {
    ++this.nodes;
    if (this.spent()) return;
    if (KEEL_SKIPPED_TAGS.has(el.tagName)) return;
    // A fieldset's legend is its group's name, on the group's line already.
    if (el.tagName === 'LEGEND' && el.parentElement && el.parentElement.tagName === 'FIELDSET') return;
    if (el.getAttribute('aria-hidden') === 'true' || el.hasAttribute('inert')) return;
    if (!keelRendered(el)) return;
    const block = KEEL_BLOCK_TAGS.has(el.tagName);
    if (block) this.flushText();
    const role = keelRole(el);
    if (KEEL_INTERACTIVE_ROLES.has(role) || (!role && keelLooksClickable(el))) {
      if (el.checkVisibility({ visibilityProperty: true })) {
        this.addRef(el, depth, role || 'clickable');
        // A listbox, tree or menu built from elements lists its items under it; a native select lists them
        // in its line already.
        if ((role === 'listbox' || role === 'tree') && el.tagName !== 'SELECT') this.walkChildren(el, depth + 1);
      }
    } else if (role === 'list') {
      this.walkList(el, depth);
    } else if (role === 'heading') {
      this.flushText();
      const name = keelAccessibleName(el, role);
      if (name) this.push(depth, 'heading ' + keelQuote(name), this.inView(el));
      if (el.querySelector('a[href], button, input, select, textarea, [role], [onclick], [tabindex]')) {
        this.walkChildren(el, depth + 1);
      }
    } else if (KEEL_STRUCTURE_ROLES.has(role)) {
      this.flushText();
      const name = keelAccessibleName(el, role);
      const before = this.lines.length;
      const line = this.push(depth, name ? role + ' ' + keelQuote(name) : role, this.inView(el));
      this.walkChildren(el, depth + 1);
      this.flushText();
      // An empty landmark or form says nothing: drop its line.
      if (this.lines.length === before + 1 && !name) {
        this.lines.splice(line, 1);
        this.view.splice(line, 1);
      }
    } else if (role === 'img') {
      const name = keelAccessibleName(el, role);
      if (name) {
        this.flushText();
        this.push(depth, 'img ' + keelQuote(name), this.inView(el));
      }
    } else if (el instanceof HTMLLabelElement && el.control && keelRendered(el.control)) {
      this.flushText();
      ++this.labelDepth;
      this.walkChildren(el, depth);
      --this.labelDepth;
    } else {
      this.walkChildren(el, depth);
    }
    if (block) this.flushText();
  }

  /**
   * A list: "list (N items)", then each item's lines one level deeper, the first marked "- ".
   * @param {Element} el
   * @param {number} depth
   */
  walkList(el, depth) {
    this.flushText();
    const children = keelComposedChildren(el);
    /** @type {Element[]} */
    const items = [];
    for (let i = 0; i < children.length; ++i) {
      const child = children[i];
      if (child instanceof Element && !KEEL_SKIPPED_TAGS.has(child.tagName)) items.push(child);
    }
    if (items.length === 0) return;
    this.push(depth, `list (${items.length} item${items.length === 1 ? '' : 's'})`, this.inView(el));
    for (const item of items) {
      if (this.truncatedReason) return;
      if (item.tagName === 'LI' || item.getAttribute('role') === 'listitem') {
        ++this.nodes;
        if (this.spent()) return;
        if (!keelRendered(item) || item.getAttribute('aria-hidden') === 'true') continue;
        this.marker = '- ';
        this.walkChildren(item, depth + 3);
        this.flushText();
        this.marker = '';
      } else {
        this.walkElement(item, depth + 1);
      }
    }
  }
}

/**
 * Whether an element without a role is probably clickable: an inline onclick handler, or focusable by
 * tabindex. (Listeners added with addEventListener are invisible from here; such elements are reached with
 * pixel tools.)
 * @param {Element} el
 * @returns {boolean}
 */
function keelLooksClickable(el) {
  if (el.hasAttribute('onclick')) return true;
  const tabindex = el.getAttribute('tabindex');
  return tabindex !== null && Number(tabindex) >= 0 && el.tagName !== 'BODY' && el.tagName !== 'HTML';
}

/**
 * One frame's outline.
 * @param {KeelSnapshotOptions} [options]
 */
function keelSnapshot(options) {
  const writer = new KeelOutlineWriter(options || {});
  keelRegistrySweep();
  const root = document.body || document.documentElement;
  if (root) writer.walkChildren(root, 0);
  writer.flushText();
  return {
    url: location.href,
    title: keelCleanText(document.title, 200),
    lines: writer.lines,
    inView: writer.view.join(''),
    refs: writer.refs,
    iframes: writer.iframes,
    truncated: writer.truncatedReason !== '',
    truncatedReason: writer.truncatedReason,
    nextIndex: keelRegistry.next,
    viewport: [innerWidth, innerHeight, Math.round(scrollX), Math.round(scrollY)],
    stats: { elements: writer.nodes, ms: Math.round(performance.now() - writer.started) },
  };
}

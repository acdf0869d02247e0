// observer.js — what changed in a frame while an action ran, and the waits around it.
//
// observeStart begins recording DOM changes (a MutationObserver on the document; changes inside shadow roots
// are not seen, an observer does not cross them); observeTake returns what changed since the start or the last
// take — the interactive elements that appeared (with registry indices, so they get refs at once), how many
// elements were removed, how many text and state changes — and starts a new period. barrier resolves after
// the page had a chance to react to an action (one animation frame, raced with a short timeout because a
// background tab gets no frames, then one task). waitForText resolves when a text appears in (or disappears
// from) the frame's visible text, or when its timeout passes.

/** Attributes whose change is a visible state change worth counting. */
const KEEL_STATE_ATTRIBUTES = [
  'disabled', 'hidden', 'open', 'checked', 'selected', 'aria-expanded', 'aria-checked', 'aria-selected',
  'aria-hidden', 'aria-disabled', 'aria-pressed', 'value',
];

/** Most new interactive elements one take reports. */
const KEEL_MAX_REPORTED_ADDED = 50;

const keelChanges = {
  /** @type {MutationObserver | null} */
  observer: null,
  /** @type {Set<Element>} */
  added: new Set(),
  removed: 0,
  text: 0,
  states: 0,
};

/**
 * @param {MutationRecord[]} records
 */
function keelRecordMutations(records) {
  for (const record of records) {
    if (record.type === 'childList') {
      for (const node of record.addedNodes) {
        if (node instanceof Element) keelChanges.added.add(node);
        else if (node.nodeType === Node.TEXT_NODE) ++keelChanges.text;
      }
      for (const node of record.removedNodes) {
        if (node instanceof Element) {
          if (keelChanges.added.has(node)) keelChanges.added.delete(node);
          else ++keelChanges.removed;
        }
      }
    } else if (record.type === 'characterData') {
      ++keelChanges.text;
    } else if (record.type === 'attributes') {
      ++keelChanges.states;
    }
  }
}

/**
 * Starts recording changes (again: a running record is reset).
 * @returns {{ok: boolean}}
 */
function keelObserveStart() {
  if (keelChanges.observer) keelChanges.observer.disconnect();
  keelChanges.added = new Set();
  keelChanges.removed = 0;
  keelChanges.text = 0;
  keelChanges.states = 0;
  const observer = new MutationObserver(keelRecordMutations);
  observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true,
                               attributeFilter: KEEL_STATE_ATTRIBUTES });
  keelChanges.observer = observer;
  return { ok: true };
}

/**
 * What changed since observeStart or the last take; recording goes on.
 * @param {{nextIndex?: number}} args
 * @returns {{observing: boolean, added: {index: number, role: string, name: string}[], moreAdded: number,
 *            removed: number, textChanges: number, stateChanges: number, url: string, title: string}}
 */
function keelObserveTake(args) {
  const observing = keelChanges.observer !== null;
  if (keelChanges.observer) keelRecordMutations(keelChanges.observer.takeRecords());
  const nextIndex = typeof args.nextIndex === 'number' ? args.nextIndex : 1;
  /** @type {{index: number, role: string, name: string}[]} */
  const added = [];
  let moreAdded = 0;
  /** @param {Element} el */
  const consider = (el) => {
    const role = keelRole(el);
    if (!KEEL_INTERACTIVE_ROLES.has(role) || !el.checkVisibility({ visibilityProperty: true })) return;
    if (added.length >= KEEL_MAX_REPORTED_ADDED) {
      ++moreAdded;
      return;
    }
    const name = keelAccessibleName(el, role);
    added.push({ index: keelRegister(el, role, name, nextIndex), role, name });
  };
  for (const root of keelChanges.added) {
    if (!root.isConnected) continue;
    // Only the outermost added elements: a subtree added at once is one record per root.
    let inner = false;
    for (let at = root.parentElement; at; at = at.parentElement) {
      if (keelChanges.added.has(at)) {
        inner = true;
        break;
      }
    }
    if (inner) continue;
    consider(root);
    for (const el of root.querySelectorAll('*')) consider(el);
  }
  const result = { observing, added, moreAdded, removed: keelChanges.removed, textChanges: keelChanges.text,
                   stateChanges: keelChanges.states, url: location.href, title: keelCleanText(document.title, 200) };
  keelChanges.added = new Set();
  keelChanges.removed = 0;
  keelChanges.text = 0;
  keelChanges.states = 0;
  return result;
}

/**
 * Resolves once the page had a chance to react: an animation frame (or 100 ms, whichever is first), then a task.
 * @returns {Promise<{ok: boolean}>}
 */
function keelBarrier() {
  return new Promise((resolve) => {
    let done = false;
    const next = () => {
      if (done) return;
      done = true;
      setTimeout(() => resolve({ ok: true }), 0);
    };
    requestAnimationFrame(next);
    setTimeout(next, 100);
  });
}

/**
 * Waits until `text` is in the frame's visible text (or, with `gone`, no longer is), checking at every DOM
 * change; resolves {found: false} after `timeoutMs` (default 10,000).
 * @param {{text: string, gone?: boolean, timeoutMs?: number}} args
 * @returns {Promise<{found: boolean, ms: number}>}
 */
function keelWaitForText(args) {
  const started = performance.now();
  const wanted = String(args.text || '').toLowerCase();
  const gone = Boolean(args.gone);
  const timeoutMs = typeof args.timeoutMs === 'number' ? args.timeoutMs : 10000;
  const satisfied = () => {
    const body = document.body || document.documentElement;
    const present = body ? keelContentText(body).toLowerCase().includes(wanted) : false;
    return present !== gone;
  };
  return new Promise((resolve) => {
    if (satisfied()) {
      resolve({ found: true, ms: 0 });
      return;
    }
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const observer = new MutationObserver(() => {
      if (!satisfied()) return;
      observer.disconnect();
      clearTimeout(timer);
      resolve({ found: true, ms: Math.round(performance.now() - started) });
    });
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    timer = setTimeout(() => {
      observer.disconnect();
      resolve({ found: false, ms: Math.round(performance.now() - started) });
    }, timeoutMs);
  });
}

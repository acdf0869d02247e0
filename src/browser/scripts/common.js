// common.js — shared helpers of keel's page scripts: text cleaning, roles, accessible names, states,
// visibility. Runs in keel's isolated world (CDP) or, later, as an extension content script: no CDP-specific
// code here. Every string that leaves the page goes through keelCleanText (well-formed, collapsed, capped), so
// a lone surrogate or a megabyte of whitespace in the page never reaches keel as is.

/** Longest accessible name or value keel reports, in characters. */
const KEEL_NAME_CAP = 80;

/**
 * Collapses whitespace, trims, replaces lone surrogates (toWellFormed) and caps the length with "…".
 * @param {string | null | undefined} text
 * @param {number} [cap]
 * @returns {string}
 */
function keelCleanText(text, cap = KEEL_NAME_CAP) {
  if (!text) return '';
  let clean = text.replace(/\s+/g, ' ').trim();
  if (clean.length > cap) {
    let cut = cap - 1;
    const last = clean.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff) --cut;  // do not split a surrogate pair
    clean = clean.slice(0, cut).trimEnd() + '…';
  }
  return clean.toWellFormed();
}

/** Roles an element has without a role attribute, by tag. Input types are handled in keelImplicitRole. */
const KEEL_TAG_ROLES = /** @type {Record<string, string>} */ ({
  A: 'link', AREA: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox', SUMMARY: 'button',
  H1: 'heading', H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading',
  NAV: 'navigation', MAIN: 'main', FORM: 'form', ASIDE: 'complementary', DIALOG: 'dialog',
  TABLE: 'table', UL: 'list', OL: 'list', MENU: 'list', IMG: 'img', IFRAME: 'iframe', FRAME: 'iframe',
  HEADER: 'banner', FOOTER: 'contentinfo', FIELDSET: 'group', OPTION: 'option', PROGRESS: 'progressbar',
  METER: 'meter', DETAILS: 'group',
});

/** Roles of <input>, by type; unknown types are text boxes as in HTML. */
const KEEL_INPUT_ROLES = /** @type {Record<string, string>} */ ({
  checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button', reset: 'button', image: 'button',
  range: 'slider', number: 'spinbutton', search: 'searchbox', file: 'file', color: 'button',
});

/** Roles that take their name from their content (WAI-ARIA "name from content"). */
const KEEL_NAME_FROM_CONTENT = new Set([
  'link', 'button', 'heading', 'checkbox', 'radio', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio',
  'option', 'switch', 'treeitem', 'cell', 'columnheader', 'rowheader', 'tooltip', 'summary', 'clickable',
]);

/** Roles that get a ref: what a person could click, type into or choose. */
const KEEL_INTERACTIVE_ROLES = new Set([
  'link', 'button', 'checkbox', 'radio', 'textbox', 'searchbox', 'combobox', 'listbox', 'slider',
  'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'treeitem',
  'file', 'iframe', 'scrollbar',
]);

/** Roles of controls whose value is typed text. */
const KEEL_TEXT_ENTRY_ROLES = new Set(['textbox', 'searchbox', 'spinbutton', 'combobox']);

/** Roles that structure the outline (a line without a ref, children indented under it). */
const KEEL_STRUCTURE_ROLES = new Set([
  'navigation', 'main', 'form', 'complementary', 'dialog', 'alertdialog', 'table', 'banner', 'contentinfo',
  'group', 'region', 'search', 'tablist', 'menu', 'menubar', 'toolbar', 'tree', 'grid', 'alert', 'status',
]);

/**
 * The element's role: its first role attribute token, else the implicit role of its tag, else ''.
 * @param {Element} el
 * @returns {string}
 */
function keelRole(el) {
  const explicit = el.getAttribute('role');
  if (explicit) {
    const first = explicit.trim().split(/\s+/)[0];
    if (first && first !== 'none' && first !== 'presentation' && first !== 'generic') return first;
  }
  return keelImplicitRole(el);
}

/**
 * @param {Element} el
 * @returns {string}
 */
function keelImplicitRole(el) {
  const tag = el.tagName;
  if (tag === 'INPUT') {
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (type === 'hidden') return '';
    return KEEL_INPUT_ROLES[type] || 'textbox';
  }
  if (tag === 'A' || tag === 'AREA') return el.hasAttribute('href') ? 'link' : '';
  if (tag === 'SELECT') {
    const select = /** @type {HTMLSelectElement} */ (el);
    return select.multiple || select.size > 1 ? 'listbox' : 'combobox';
  }
  if (tag === 'SECTION') return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : '';
  if (tag === 'IMG') return el.getAttribute('alt') === '' ? '' : 'img';
  if (el instanceof HTMLElement && el.isContentEditable &&
      !(el.parentElement && el.parentElement.isContentEditable)) {
    return 'textbox';
  }
  return KEEL_TAG_ROLES[tag] || '';
}

/**
 * The element's text as a person reads it. innerText does not cross shadow roots nor follow slots, so an
 * element with either is read by a composed-tree walk instead (text nodes of rendered elements only).
 * @param {Element} el
 * @returns {string}
 */
function keelContentText(el) {
  if (!el.shadowRoot && !el.querySelector('slot') && !(el instanceof HTMLSlotElement)) {
    const html = /** @type {HTMLElement} */ (el);
    const text = typeof html.innerText === 'string' ? html.innerText : el.textContent;
    return text || '';
  }
  /** @type {string[]} */
  const parts = [];
  /** @param {Node} node */
  const visit = (node) => {
    const children = node instanceof Element && node.shadowRoot ? node.shadowRoot.childNodes
        : node instanceof HTMLSlotElement && node.assignedNodes({ flatten: true }).length > 0
        ? node.assignedNodes({ flatten: true }) : node.childNodes;
    for (let i = 0; i < children.length; ++i) {
      const child = children[i];
      if (child.nodeType === Node.TEXT_NODE) {
        parts.push(child.nodeValue || '');
      } else if (child instanceof Element && !KEEL_TEXTLESS_TAGS.has(child.tagName) && keelRendered(child)) {
        visit(child);
      }
    }
  };
  visit(el);
  return parts.join(' ');
}

/** Elements whose text is not page text. */
const KEEL_TEXTLESS_TAGS = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE']);

/** Form controls, whose option lists and contents are not part of a label naming them. */
const KEEL_CONTROL_TAGS = new Set(['SELECT', 'TEXTAREA', 'INPUT', 'DATALIST', 'BUTTON']);

/**
 * A label's text without the controls inside it: `<label>Country <select>…</select></label>` names the
 * select "Country", not "Country France Japan …".
 * @param {Element} label
 * @returns {string}
 */
function keelLabelText(label) {
  if (!label.querySelector('select, textarea, input, datalist, button')) return keelContentText(label);
  /** @type {string[]} */
  const parts = [];
  /** @param {Node} node */
  const visit = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        parts.push(child.nodeValue || '');
      } else if (child instanceof Element && !KEEL_CONTROL_TAGS.has(child.tagName) &&
                 !KEEL_TEXTLESS_TAGS.has(child.tagName) && keelRendered(child)) {
        visit(child);
      }
    }
  };
  visit(label);
  return parts.join(' ');
}

/**
 * The accessible name, close to what a screen reader announces (a practical subset of accname 1.2).
 * @param {Element} el
 * @param {string} role
 * @returns {string}
 */
function keelAccessibleName(el, role) {
  const labelledBy = el.getAttribute('aria-labelledby');
  if (labelledBy) {
    const root = /** @type {Document | ShadowRoot} */ (el.getRootNode());
    const parts = [];
    for (const id of labelledBy.trim().split(/\s+/)) {
      const target = root.getElementById ? root.getElementById(id) : null;
      if (target) parts.push(target === el ? '' : keelLabelText(target));
    }
    const joined = keelCleanText(parts.join(' '));
    if (joined) return joined;
  }
  const ariaLabel = keelCleanText(el.getAttribute('aria-label'));
  if (ariaLabel) return ariaLabel;
  const labels = /** @type {HTMLInputElement} */ (el).labels;
  if (labels && labels.length > 0) {
    const text = keelCleanText(Array.from(labels, (label) => keelLabelText(label)).join(' '));
    if (text) return text;
  }
  if (el.tagName === 'IMG' || el.tagName === 'AREA' ||
      (el.tagName === 'INPUT' && el.getAttribute('type') === 'image')) {
    const alt = keelCleanText(el.getAttribute('alt'));
    if (alt) return alt;
  }
  if (el.tagName === 'INPUT') {
    const input = /** @type {HTMLInputElement} */ (el);
    if (input.type === 'submit' || input.type === 'button' || input.type === 'reset') {
      const value = keelCleanText(input.value || (input.type === 'submit' ? 'Submit' : ''));
      if (value) return value;
    }
  }
  if (el.tagName === 'FIELDSET') {
    const legend = el.querySelector(':scope > legend');
    if (legend) return keelCleanText(keelContentText(legend));
  }
  if (KEEL_NAME_FROM_CONTENT.has(role)) {
    const text = keelCleanText(keelContentText(el));
    if (text) return text;
  }
  const title = keelCleanText(el.getAttribute('title'));
  if (title) return title;
  return keelCleanText(el.getAttribute('placeholder'));
}

/**
 * States worth telling the model, in a fixed order: "checked", "disabled", …
 * @param {Element} el
 * @param {string} role
 * @returns {string[]}
 */
function keelStates(el, role) {
  const states = [];
  const input = /** @type {HTMLInputElement} */ (el);
  const checkedAttr = el.getAttribute('aria-checked');
  if ((role === 'checkbox' || role === 'radio' || role === 'switch' || role.startsWith('menuitem')) &&
      (input.checked === true || checkedAttr === 'true')) {
    states.push('checked');
  } else if (checkedAttr === 'mixed' || input.indeterminate === true) {
    states.push('mixed');
  }
  if (input.disabled === true || el.getAttribute('aria-disabled') === 'true') states.push('disabled');
  const expanded = el.getAttribute('aria-expanded');
  if (expanded === 'true') states.push('expanded');
  if (expanded === 'false') states.push('collapsed');
  if (el.tagName === 'DETAILS') states.push(/** @type {HTMLDetailsElement} */ (el).open ? 'expanded' : 'collapsed');
  if (el.getAttribute('aria-selected') === 'true' || el.getAttribute('aria-current') === 'page') {
    states.push('selected');
  }
  if (input.required === true || el.getAttribute('aria-required') === 'true') states.push('required');
  if (input.readOnly === true || el.getAttribute('aria-readonly') === 'true') states.push('readonly');
  if (el.ownerDocument.activeElement === el) states.push('focused');
  // A value typed that does not validate; an empty or unchecked required control is not "invalid" until a
  // submission says so (as :user-invalid), so it is only "required" here.
  const textEntry = el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && KEEL_TEXT_ENTRY_ROLES.has(role));
  if (el.getAttribute('aria-invalid') === 'true' ||
      (textEntry && input.willValidate && input.validity && !input.validity.valid && input.value !== '')) {
    states.push('invalid');
  }
  return states;
}

/**
 * The value a person sees in a form control, or null when the control has none to show. Passwords are masked.
 * @param {Element} el
 * @param {string} role
 * @returns {string | null}
 */
function keelValue(el, role) {
  if (el.tagName === 'INPUT') {
    const input = /** @type {HTMLInputElement} */ (el);
    if (role === 'checkbox' || role === 'radio' || role === 'button' || role === 'file') {
      if (role === 'file' && input.files && input.files.length > 0) {
        return keelCleanText(Array.from(input.files, (f) => f.name).join(', '));
      }
      return null;
    }
    if (!input.value) return null;
    return input.type === 'password' ? '•••' : keelCleanText(input.value);
  }
  if (el.tagName === 'TEXTAREA') {
    const value = /** @type {HTMLTextAreaElement} */ (el).value;
    return value ? keelCleanText(value) : null;
  }
  if (el.tagName === 'SELECT') {
    const select = /** @type {HTMLSelectElement} */ (el);
    const chosen = Array.from(select.selectedOptions, (o) => keelCleanText(o.label || o.text));
    return chosen.length > 0 ? chosen.join(', ') : null;
  }
  if (role === 'textbox' && el instanceof HTMLElement && el.isContentEditable) {
    const text = keelCleanText(keelContentText(el));
    return text || null;
  }
  return null;
}

/**
 * Whether the element renders at all (display, content-visibility). `display: contents` elements have no box
 * but their children do, so they count as visible.
 * @param {Element} el
 * @returns {boolean}
 */
function keelRendered(el) {
  if (el.checkVisibility()) return true;
  return getComputedStyle(el).display === 'contents';
}

/**
 * The element's box in CSS pixels of its frame's viewport, rounded: [x, y, width, height].
 * @param {Element} el
 * @returns {number[]}
 */
function keelRect(el) {
  const r = el.getBoundingClientRect();
  return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];
}

/**
 * @param {number[]} rect as keelRect gives it
 * @returns {boolean} whether any of it is inside the frame's viewport
 */
function keelInViewport(rect) {
  const [x, y, w, h] = rect;
  return w > 0 && h > 0 && x < innerWidth && y < innerHeight && x + w > 0 && y + h > 0;
}

/**
 * A link target as the model needs it: a same-origin path, else the URL; both cut at 60 characters.
 * Returns '' for javascript: and empty targets.
 * @param {Element} el
 * @returns {string}
 */
function keelLinkTarget(el) {
  const href = el.getAttribute('href');
  if (!href || /^\s*javascript:/i.test(href)) return '';
  let target = href;
  try {
    const url = new URL(href, el.ownerDocument.baseURI);
    const here = new URL(location.href);
    if (url.hash && url.origin === here.origin && url.pathname === here.pathname && url.search === here.search) {
      target = url.hash;  // an anchor in this document
    } else {
      target = url.origin === here.origin ? url.pathname + url.search + url.hash : url.href;
    }
  } catch {
    // an unparseable href is shown as written
  }
  return keelCleanText(target, 60);
}

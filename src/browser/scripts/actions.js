// actions.js — the DOM-level (L1) actions on a ref's element: click, hover, fill, select an option, set a
// checkbox. They run synchronously in the element's world and dispatch the events a person's input would
// (isTrusted is false: a site that checks it needs the pixel tools). Each returns {ok: true, …} or
// {ok: false, reason, …} with a reason keel maps to an error the model can act on:
//   stale        — the index names no connected element (the ref no longer points at it)
//   origin       — the frame is no longer at the origin keel decided on
//   not_visible  — the element has no box to act on
//   disabled     — the control is disabled
//   covered      — another element is on top of it at the point of the click (`cover` says which)
//   not_editable / not_checkable / not_select / no_such_option — the action does not fit the element
// Nothing here clicks through a covering element or retargets to another one.

/**
 * @typedef {{index: number, expectOrigin?: string}} KeelTarget
 * @typedef {{ok: boolean, reason?: string, cover?: {role: string, name: string, index: number | null},
 *            box?: number[], value?: string | null, checked?: boolean, options?: string[]}} KeelActionResult
 */

/**
 * The element behind a ref, or the reason it cannot be acted on.
 * @param {KeelTarget} target
 * @returns {{el: Element} | {failure: KeelActionResult}}
 */
function keelActionTarget(target) {
  if (typeof target.expectOrigin === 'string' && target.expectOrigin !== location.origin) {
    return { failure: { ok: false, reason: 'origin' } };
  }
  const el = keelLookup(target.index);
  if (!el) return { failure: { ok: false, reason: 'stale' } };
  return { el };
}

/**
 * The deepest element at a point of the viewport, through open shadow roots.
 * @param {number} x
 * @param {number} y
 * @returns {Element | null}
 */
function keelHitTest(x, y) {
  let hit = document.elementFromPoint(x, y);
  while (hit && hit.shadowRoot) {
    const inner = hit.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  return hit;
}

/**
 * Whether `node` is `ancestor` or inside it in the composed tree (crossing shadow roots upwards).
 * @param {Node} ancestor
 * @param {Node | null} node
 * @returns {boolean}
 */
function keelComposedContains(ancestor, node) {
  for (let at = node; at; at = at instanceof ShadowRoot ? at.host : at.parentNode) {
    if (at === ancestor) return true;
  }
  return false;
}

/**
 * Scrolls the element into the middle of the viewport and finds the point a click would hit.
 * @param {Element} el
 * @returns {{x: number, y: number, hit: Element, box: number[]} | {failure: KeelActionResult}}
 */
function keelPointOf(el) {
  el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const rects = el.getClientRects();
  const first = rects.length > 0 ? rects[0] : null;
  if (!first || first.width <= 0 || first.height <= 0) return { failure: { ok: false, reason: 'not_visible' } };
  const x = Math.min(Math.max(first.left + first.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(first.top + first.height / 2, 0), innerHeight - 1);
  const hit = keelHitTest(x, y);
  const box = keelRect(el);
  if (!hit) return { failure: { ok: false, reason: 'not_visible', box } };
  const label = hit.closest('label');
  const throughLabel = label instanceof HTMLLabelElement && label.control === el;
  if (!keelComposedContains(el, hit) && !throughLabel) {
    let cover = hit;
    // Name the covering element by its nearest ancestor with a role (a dialog, a banner), not a bare div.
    for (let at = /** @type {Element | null} */ (hit); at; at = at.parentElement) {
      if (keelRole(at)) {
        cover = at;
        break;
      }
    }
    const role = keelRole(cover) || cover.tagName.toLowerCase();
    const known = keelRegistry.byElement.get(cover);
    return { failure: { ok: false, reason: 'covered', box,
                        cover: { role, name: keelAccessibleName(cover, role), index: known ? known.index : null } } };
  }
  return { x, y, hit: keelComposedContains(el, hit) ? hit : el, box };
}

/**
 * @param {Element} target
 * @param {string} type
 * @param {number} x
 * @param {number} y
 * @param {boolean} pointer whether a PointerEvent (else a MouseEvent)
 */
function keelDispatchMouse(target, type, x, y, pointer) {
  const init = { bubbles: !type.endsWith('enter') && !type.endsWith('leave'), cancelable: true, composed: true,
                 clientX: x, clientY: y, button: 0, buttons: type.endsWith('down') ? 1 : 0, view: window };
  const event = pointer ? new PointerEvent(type, { ...init, pointerId: 1, pointerType: 'mouse', isPrimary: true })
                        : new MouseEvent(type, { ...init, detail: type === 'click' ? 1 : 0 });
  return target.dispatchEvent(event);
}

/**
 * @param {Element} el
 * @returns {boolean}
 */
function keelIsDisabled(el) {
  return /** @type {HTMLButtonElement} */ (el).disabled === true || el.getAttribute('aria-disabled') === 'true';
}

/**
 * Hover, press and release at the element's centre, then click (what a mouse click dispatches, in order).
 * @param {KeelTarget} args
 * @returns {KeelActionResult}
 */
function keelClick(args) {
  const target = keelActionTarget(args);
  if ('failure' in target) return target.failure;
  const el = target.el;
  if (keelIsDisabled(el)) return { ok: false, reason: 'disabled' };
  const point = keelPointOf(el);
  if ('failure' in point) return point.failure;
  const { x, y, hit } = point;
  for (const type of ['pointerover', 'pointerenter', 'mouseover', 'mouseenter', 'pointermove', 'mousemove']) {
    keelDispatchMouse(hit, type, x, y, type.startsWith('pointer'));
  }
  keelDispatchMouse(hit, 'pointerdown', x, y, true);
  const pressed = keelDispatchMouse(hit, 'mousedown', x, y, false);
  if (pressed && el instanceof HTMLElement && el.tabIndex >= 0) el.focus({ preventScroll: true });
  keelDispatchMouse(hit, 'pointerup', x, y, true);
  keelDispatchMouse(hit, 'mouseup', x, y, false);
  // HTMLElement.click() would skip the coordinates; a MouseEvent click runs the same activation behaviour
  // (follow a link, toggle a checkbox, submit a form).
  keelDispatchMouse(hit, 'click', x, y, false);
  return { ok: true, box: point.box };
}

/**
 * Moves the pointer onto the element's centre.
 * @param {KeelTarget} args
 * @returns {KeelActionResult}
 */
function keelHover(args) {
  const target = keelActionTarget(args);
  if ('failure' in target) return target.failure;
  const point = keelPointOf(target.el);
  if ('failure' in point) return point.failure;
  for (const type of ['pointerover', 'pointerenter', 'mouseover', 'mouseenter', 'pointermove', 'mousemove']) {
    keelDispatchMouse(point.hit, type, point.x, point.y, type.startsWith('pointer'));
  }
  return { ok: true, box: point.box };
}

/**
 * Sets a value through the prototype's setter, so frameworks that wrap the instance's `value` property
 * (React's controlled inputs) see the change when the input event arrives.
 * @param {HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement} el
 * @param {string} value
 */
function keelSetNativeValue(el, value) {
  const proto = Object.getPrototypeOf(el);
  const descriptor = Object.getOwnPropertyDescriptor(proto, 'value');
  if (descriptor && descriptor.set) {
    descriptor.set.call(el, value);
  } else {
    el.value = value;
  }
}

/** Input types whose value is typed text. */
const KEEL_TEXT_INPUT_TYPES = new Set([
  'text', 'search', 'email', 'url', 'tel', 'password', 'number', 'date', 'datetime-local', 'month', 'week',
  'time', 'color', 'range',
]);

/**
 * Replaces a text field's value (input, textarea, contenteditable) and fires input and change; with
 * `submit`, submits the field's form as pressing Enter would.
 * @param {KeelTarget & {value: string, submit?: boolean}} args
 * @returns {KeelActionResult}
 */
function keelFill(args) {
  const target = keelActionTarget(args);
  if ('failure' in target) return target.failure;
  const el = target.el;
  const value = String(args.value);
  if (keelIsDisabled(el)) return { ok: false, reason: 'disabled' };
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
    if (el instanceof HTMLInputElement && !KEEL_TEXT_INPUT_TYPES.has(el.type)) {
      return { ok: false, reason: 'not_editable' };
    }
    if (el.readOnly) return { ok: false, reason: 'not_editable' };
    el.focus({ preventScroll: true });
    keelSetNativeValue(el, value);
  } else if (el instanceof HTMLElement && el.isContentEditable) {
    el.focus({ preventScroll: true });
    el.textContent = value;
  } else {
    return { ok: false, reason: 'not_editable' };
  }
  el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: value }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  if (args.submit) {
    const form = /** @type {HTMLInputElement} */ (el).form;
    if (form) form.requestSubmit();
  }
  return { ok: true, value: keelValue(el, keelRole(el)) };
}

/**
 * Selects the options whose label, text or value equals one of `values` (all others are deselected).
 * @param {KeelTarget & {values: string[]}} args
 * @returns {KeelActionResult}
 */
function keelSelectOption(args) {
  const target = keelActionTarget(args);
  if ('failure' in target) return target.failure;
  const el = target.el;
  if (!(el instanceof HTMLSelectElement)) return { ok: false, reason: 'not_select' };
  if (el.disabled) return { ok: false, reason: 'disabled' };
  const wanted = Array.isArray(args.values) ? args.values.map(String) : [];
  const options = Array.from(el.options);
  const matches = (/** @type {HTMLOptionElement} */ o) =>
    wanted.some((w) => w === o.value || w === keelCleanText(o.label) || w === keelCleanText(o.text));
  const chosen = options.filter(matches);
  if (chosen.length === 0 || chosen.length < wanted.length || (!el.multiple && wanted.length > 1)) {
    return { ok: false, reason: 'no_such_option', options: options.map((o) => keelCleanText(o.label || o.text)) };
  }
  for (const option of options) option.selected = chosen.includes(option);
  el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { ok: true, value: keelValue(el, keelRole(el)) };
}

/**
 * Checks or unchecks a checkbox, radio or switch by clicking it when its state differs, then verifies.
 * @param {KeelTarget & {checked: boolean}} args
 * @returns {KeelActionResult}
 */
function keelSetChecked(args) {
  const target = keelActionTarget(args);
  if ('failure' in target) return target.failure;
  const el = target.el;
  const role = keelRole(el);
  if (role !== 'checkbox' && role !== 'radio' && role !== 'switch' && role !== 'menuitemcheckbox') {
    return { ok: false, reason: 'not_checkable' };
  }
  const isChecked = () => /** @type {HTMLInputElement} */ (el).checked === true ||
      el.getAttribute('aria-checked') === 'true';
  if (isChecked() !== Boolean(args.checked)) {
    const clicked = keelClick(args);
    if (!clicked.ok) return clicked;
  }
  const checked = isChecked();
  if (checked !== Boolean(args.checked)) return { ok: false, reason: 'not_checkable', checked };
  return { ok: true, checked };
}

/**
 * Scrolls the element into view (centred), or the page by `dx`/`dy` pixels; returns the page's scroll
 * position afterwards.
 * @param {{index?: number, dx?: number, dy?: number}} args
 * @returns {KeelActionResult & {x?: number, y?: number}}
 */
function keelScroll(args) {
  if (typeof args.index === 'number') {
    const el = keelLookup(args.index);
    if (!el) return { ok: false, reason: 'stale' };
    el.scrollIntoView({ block: 'center', inline: 'nearest' });
  } else {
    window.scrollBy(typeof args.dx === 'number' ? args.dx : 0, typeof args.dy === 'number' ? args.dy : 0);
  }
  return { ok: true, x: Math.round(window.scrollX), y: Math.round(window.scrollY) };
}

/**
 * Moves the keyboard focus to the element (for a key press aimed at it).
 * @param {KeelTarget} args
 * @returns {KeelActionResult}
 */
function keelFocus(args) {
  const target = keelActionTarget(args);
  if ('failure' in target) return target.failure;
  const el = target.el;
  if (keelIsDisabled(el)) return { ok: false, reason: 'disabled' };
  if (!(el instanceof HTMLElement) && !(el instanceof SVGElement)) return { ok: false, reason: 'not_editable' };
  el.focus({ preventScroll: false });
  return { ok: true };
}

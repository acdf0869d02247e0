// api.js — the surface keel calls: installed once per world as the non-enumerable `globalThis.__keel`.
// keel calls `__keel[fn](args)` with JSON arguments and takes JSON results back (returnByValue). Evaluating
// the bundle again in a world that has it keeps the existing object, so the registry and its indices survive.

/** Bumped when the surface changes in a way keel's C++ side must know about. */
const KEEL_SCRIPTS_VERSION = 1;

/** @returns {number} the version of the installed surface */
function keelInstall() {
  const existing = /** @type {{version?: number} | undefined} */ (
    /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (globalThis))['__keel']);
  if (existing && existing.version === KEEL_SCRIPTS_VERSION) return KEEL_SCRIPTS_VERSION;
  const api = Object.freeze({
    version: KEEL_SCRIPTS_VERSION,
    snapshot: keelSnapshot,
    describeRef: keelDescribeRef,
    element: keelLookup,
    findText: keelFindText,
    readText: keelReadText,
    click: keelClick,
    hover: keelHover,
    fill: keelFill,
    selectOption: keelSelectOption,
    setChecked: keelSetChecked,
    scroll: keelScroll,
    focus: keelFocus,
    observeStart: keelObserveStart,
    observeTake: keelObserveTake,
    barrier: keelBarrier,
    waitForText: keelWaitForText,
  });
  Object.defineProperty(globalThis, '__keel', { value: api, enumerable: false, configurable: true });
  return KEEL_SCRIPTS_VERSION;
}

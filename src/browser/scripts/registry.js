// registry.js — the element registry behind refs: element → stable index, index → element.
//
// Guarantees: an element keeps its index while its role and accessible name stay the same (so "e12" means the
// same button across snapshots); an element whose role or name changed gets a new index; indices are never
// reused within this world, and never below the `nextIndex` keel passes in (keel's counters persist across
// worlds, navigations and restarts, the page's do not). Elements are held weakly: the registry never keeps a
// removed element alive.

/** @typedef {{index: number, role: string, name: string}} KeelRegistryEntry */

const keelRegistry = {
  /** @type {WeakMap<Element, KeelRegistryEntry>} */
  byElement: new WeakMap(),
  /** @type {Map<number, {ref: WeakRef<Element>, role: string, name: string}>} */
  byIndex: new Map(),
  next: 1,
};

/**
 * The element's index for this role and name: its old one if they are unchanged, else a new one.
 * @param {Element} el
 * @param {string} role
 * @param {string} name
 * @param {number} nextIndex keel's lowest unused index for this frame ordinal
 * @returns {number}
 */
function keelRegister(el, role, name, nextIndex) {
  if (nextIndex > keelRegistry.next) keelRegistry.next = nextIndex;
  const known = keelRegistry.byElement.get(el);
  if (known && known.role === role && known.name === name) return known.index;
  if (known) keelRegistry.byIndex.delete(known.index);
  const index = keelRegistry.next++;
  keelRegistry.byElement.set(el, { index, role, name });
  keelRegistry.byIndex.set(index, { ref: new WeakRef(el), role, name });
  return index;
}

/**
 * The element registered under `index` if it is still in the document, else null.
 * @param {number} index
 * @returns {Element | null}
 */
function keelLookup(index) {
  const entry = keelRegistry.byIndex.get(index);
  if (!entry) return null;
  const el = entry.ref.deref();
  if (!el || !el.isConnected) {
    keelRegistry.byIndex.delete(index);
    return null;
  }
  return el;
}

/**
 * What keel checks before acting on a ref: whether the element is still there and whether its role and name
 * are still those the ref was issued for.
 * @param {{index: number}} args
 * @returns {{found: boolean, role?: string, name?: string, registeredRole?: string, registeredName?: string}}
 */
function keelDescribeRef(args) {
  const el = keelLookup(args.index);
  const entry = keelRegistry.byIndex.get(args.index);
  if (!el || !entry) return { found: false };
  const role = keelRole(el);
  return { found: true, role, name: keelAccessibleName(el, role), registeredRole: entry.role,
           registeredName: entry.name };
}

/** Forgets indices whose element was collected or left the document (called once per snapshot). */
function keelRegistrySweep() {
  for (const [index, entry] of keelRegistry.byIndex) {
    const el = entry.ref.deref();
    if (!el || !el.isConnected) keelRegistry.byIndex.delete(index);
  }
}

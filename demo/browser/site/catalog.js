// The demo shop's catalog and helpers, shared by its pages. Fixed data: the demo's script relies on
// every page looking the same on every run.
const CATALOG = [
  { id: 'desk-lamp', name: 'Desk lamp', price: 39.9, text: 'An adjustable LED desk lamp with a warm light.' },
  { id: 'floor-lamp', name: 'Floor lamp', price: 89.0, text: 'A tall reading lamp with a linen shade.' },
  { id: 'lamp-shade', name: 'Lamp shade', price: 19.5, text: 'A spare linen shade for the floor lamp.' },
  { id: 'notebook', name: 'Notebook', price: 7.25, text: 'A5, dotted pages, lies flat.' },
  { id: 'fountain-pen', name: 'Fountain pen', price: 24.0, text: 'A steel nib pen with a blue cartridge.' },
  { id: 'desk-chair', name: 'Desk chair', price: 149.0, text: 'An office chair with lumbar support.' },
];

function findProduct(id) {
  return CATALOG.find((p) => p.id === id) || null;
}

function formatPrice(amount) {
  return amount.toFixed(2) + ' EUR';
}

function param(name) {
  return new URLSearchParams(location.search).get(name);
}

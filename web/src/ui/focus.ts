// Where the keyboard focus goes when an action removes what held it (docs/web.md, Keyboard): a person using
// the keyboard alone must never be left on <body>. The input box is the app's home position.

export const kComposerId = "composer-input";

export function focusComposer(): void {
  document.getElementById(kComposerId)?.focus();
}

/** The thread list's item that Tab reaches (roving focus), or the search box when the list is empty. */
export function focusThreads(): void {
  const item = document.querySelector<HTMLElement>('nav[aria-label="Threads"] .thread-open[tabindex="0"]');
  (item ?? document.querySelector<HTMLElement>('input[type="search"]'))?.focus();
}

/** Focuses `element` when it is still on the page, else the input box. */
export function focusOrComposer(element: Element | null | undefined): void {
  if (element instanceof HTMLElement && element.isConnected) element.focus();
  else focusComposer();
}

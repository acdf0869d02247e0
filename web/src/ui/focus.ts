// Where the keyboard focus goes when an action removes what held it (docs/web.md, Keyboard): a person using
// the keyboard alone must never be left on <body>. The input box is the app's home position.
import type { RefObject } from "preact";
import { useLayoutEffect } from "preact/hooks";

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

/** For what can vanish under the focus without the person acting here (a card answered in another tab, a
 * run that ended): when the element held the focus as it is removed, the focus goes to the input box once
 * the removal is done. */
export function useFocusHomeOnRemoval(ref: RefObject<HTMLElement | null>): void {
  useLayoutEffect(() => {
    const element = ref.current;
    return () => {
      if (element !== null && element.contains(document.activeElement)) {
        queueMicrotask(() => {
          if (document.activeElement === null || document.activeElement === document.body) focusComposer();
        });
      }
    };
  }, []);
}

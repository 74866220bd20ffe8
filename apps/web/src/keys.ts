import type { KeyboardEvent as ReactKeyboardEvent } from 'react';

const NEXT = ['ArrowRight', 'ArrowDown'];
const PREVIOUS = ['ArrowLeft', 'ArrowUp'];

/** The index a key moves to among `count` items from `at` (wrapping), or null for other keys. */
export function movedIndex(key: string, at: number, count: number): number | null {
  if (count === 0) return null;
  if (NEXT.includes(key)) return (at + 1) % count;
  if (PREVIOUS.includes(key)) return (at - 1 + count) % count;
  if (key === 'Home') return 0;
  if (key === 'End') return count - 1;
  return null;
}

/**
 * Arrow keys, Home and End in any `role="tablist"` of the page (the WAI-ARIA tabs pattern with
 * automatic activation): focus moves to the tab and selects it. A list that handles its keys
 * itself (calling preventDefault) is left alone. Returns whether the key was used.
 */
export function handleTabListKey(event: KeyboardEvent): boolean {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return false;
  const target = event.target instanceof Element ? event.target : null;
  const tab = target?.closest<HTMLElement>('[role="tab"]');
  const list = tab?.closest('[role="tablist"]');
  if (!tab || !list) return false;
  const tabs = [...list.querySelectorAll<HTMLElement>('[role="tab"]')].filter(
    (t) => t.closest('[role="tablist"]') === list && !t.hasAttribute('disabled'),
  );
  const next = movedIndex(event.key, tabs.indexOf(tab), tabs.length);
  if (next === null) return false;
  event.preventDefault();
  tabs[next].focus();
  if (tabs[next].getAttribute('aria-selected') !== 'true') tabs[next].click();
  return true;
}

/** Home and End in a radio group (arrow keys it has natively): the first or last choice. */
export function radioGroupEnds(event: ReactKeyboardEvent<HTMLElement>): void {
  if (event.key !== 'Home' && event.key !== 'End') return;
  const radios = [...event.currentTarget.querySelectorAll<HTMLInputElement>('input[type="radio"]')].filter(
    (r) => !r.disabled,
  );
  const target = event.key === 'Home' ? radios[0] : radios[radios.length - 1];
  if (!target) return;
  event.preventDefault();
  target.focus();
  target.click();
}

/**
 * Enter sends, Shift+Enter (or Enter while an input method composes) writes a new line. Returns
 * whether the key asked to send.
 */
export function isSendKey(event: ReactKeyboardEvent<HTMLTextAreaElement>): boolean {
  return (
    event.key === 'Enter' &&
    !event.shiftKey &&
    !event.altKey &&
    !event.ctrlKey &&
    !event.metaKey &&
    !event.nativeEvent.isComposing
  );
}

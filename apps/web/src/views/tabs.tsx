import { useId, useRef, type KeyboardEvent, type ReactNode } from 'react';

/**
 * A tab list as WAI-ARIA describes it: one tab in the Tab order (the selected one), the arrow keys
 * move between tabs and select them, Home and End go to the first and the last.
 */
export function TabList({
  tabs,
  selected,
  onSelect,
  label,
  className = 'tabs',
  panelId,
}: {
  tabs: { key: string; label: ReactNode }[];
  selected: number;
  onSelect: (index: number) => void;
  label: string;
  className?: string;
  /** The id of the panel the tabs control, when there is one. */
  panelId?: string;
}) {
  const id = useId();
  const list = useRef<HTMLDivElement>(null);
  const move = (event: KeyboardEvent<HTMLButtonElement>, index: number) => {
    const last = tabs.length - 1;
    const next =
      event.key === 'ArrowRight' || event.key === 'ArrowDown'
        ? index === last
          ? 0
          : index + 1
        : event.key === 'ArrowLeft' || event.key === 'ArrowUp'
          ? index === 0
            ? last
            : index - 1
          : event.key === 'Home'
            ? 0
            : event.key === 'End'
              ? last
              : null;
    if (next === null) return;
    event.preventDefault();
    onSelect(next);
    list.current?.querySelectorAll<HTMLButtonElement>('[role="tab"]')[next]?.focus();
  };
  return (
    <div role="tablist" aria-label={label} className={className} ref={list}>
      {tabs.map((tab, i) => (
        <button
          key={tab.key}
          id={`${id}-${i}`}
          type="button"
          role="tab"
          aria-selected={selected === i}
          aria-controls={panelId}
          tabIndex={selected === i ? 0 : -1}
          onClick={() => onSelect(i)}
          onKeyDown={(e) => move(e, i)}
        >
          {tab.label}
        </button>
      ))}
    </div>
  );
}

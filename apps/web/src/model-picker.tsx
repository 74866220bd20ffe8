/**
 * ModelPicker: choose model ids for a roster (a list) or for one role (chairman, foreman,
 * facilitator), with type-ahead over GET /api/models. Free text is always allowed: any id of the
 * form provider/name (the same pattern the form and the server check) can be typed.
 *
 * Props
 * - `label` (string, required): the visible label and the combobox's accessible name.
 * - `multiple` (true for a roster; omit or false for one model) decides the type of `value`:
 *   - roster: `value: string[]` (ids in order), `onChange(ids: string[])` when an id is added or
 *     removed. Typing then Enter, a comma, a space, picking an option, or leaving the field adds
 *     what was typed (a pasted "sim/a, sim/b" adds both); Backspace in an empty field removes the
 *     last id; each id has a Remove button. `min`/`max` (numbers, optional) are shown as a hint and
 *     `max` refuses more; `unique` (boolean, default false) refuses an id already in the list.
 *   - single: `value: string` (the text as typed), `onChange(text: string)` on every keystroke and
 *     when an option is picked (it is up to the form to validate on submit, as for a text input).
 * - `name` (string, optional): the form field name (e.g. `councilModels`,
 *   `modeConfig.foremanModel`), set as the text input's `name`, so `[name="…"]` finds the field.
 * - `placeholder` (string, optional): e.g. the mode's default for this role.
 * - `error` (string, optional): an error from the form or the server, shown under the field
 *   (`role="alert"`, `data-field={name}`) and marking the input invalid; without it the picker
 *   shows its own hint for text that is not a model id.
 * - `catalogue` (ModelsResponse | null, optional): a list fetched once for several pickers (see
 *   `useModelCatalogue`); when omitted the picker fetches GET /api/models itself (one request per
 *   page, shared by every picker). `null` means "not loaded (yet)": free text only.
 * - `disabled` (boolean, optional).
 *
 * Behaviour: the list is grouped by provider (simulated, OpenRouter, OpenAI-compatible server)
 * with context length and prices per million tokens when known, filtered by every word typed, at
 * most 50 per group. Keyboard: ArrowDown/ArrowUp open the list and move, Enter picks (or adds
 * the typed text), Escape closes, Home/End jump. ARIA combobox (list autocomplete) with a listbox
 * of grouped options and `aria-activedescendant`. A source that could not be fetched is named
 * under the list with its user-safe error. For `sim/` ids a "Simulated model directives" section
 * explains the `:fail`, `:delay<ms>@kind`, … suffixes. Fits a 360 px wide screen (styles inline).
 */
import { isModelId, type ModelEntry, type ModelSource, type ModelsResponse } from '@conclave/contracts';
import { useEffect, useId, useMemo, useRef, useState, type CSSProperties, type KeyboardEvent } from 'react';
import { getModels } from './api';

interface CommonProps {
  label: string;
  name?: string;
  placeholder?: string;
  error?: string;
  catalogue?: ModelsResponse | null;
  disabled?: boolean;
}

export interface RosterPickerProps extends CommonProps {
  multiple: true;
  value: readonly string[];
  onChange: (ids: string[]) => void;
  min?: number;
  max?: number;
  unique?: boolean;
}

export interface SinglePickerProps extends CommonProps {
  multiple?: false;
  value: string;
  onChange: (id: string) => void;
}

export type ModelPickerProps = RosterPickerProps | SinglePickerProps;

// ---------------------------------------------------------------------------------------------
// The list, fetched once per page

let shared: Promise<ModelsResponse> | null = null;

/** Forgets the fetched list (tests; or after the API key changed). */
export function resetModelCatalogue(): void {
  shared = null;
}

/**
 * GET /api/models, once for every picker on the page: `catalogue` is null until it arrives (and
 * stays null if it fails: `failed` is then true, and free text still works). `enabled: false`
 * fetches nothing.
 */
export function useModelCatalogue(enabled = true): { catalogue: ModelsResponse | null; failed: boolean } {
  const [state, setState] = useState<{ catalogue: ModelsResponse | null; failed: boolean }>({
    catalogue: null,
    failed: false,
  });
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    shared ??= getModels();
    const mine = shared;
    mine.then(
      (catalogue) => live && setState({ catalogue, failed: false }),
      () => {
        // The next picker to mount asks again.
        if (shared === mine) shared = null;
        if (live) setState({ catalogue: null, failed: true });
      },
    );
    return () => {
      live = false;
    };
  }, [enabled]);
  return state;
}

// ---------------------------------------------------------------------------------------------
// Formatting

const GROUPS: { provider: ModelSource; label: string }[] = [
  { provider: 'simulated', label: 'Simulated' },
  { provider: 'openrouter', label: 'OpenRouter' },
  { provider: 'openai-compatible', label: 'OpenAI-compatible server' },
];

const PER_GROUP = 50;

/** 128000 → "128K", 2000000 → "2M". */
export function formatContext(tokens: number): string {
  if (tokens >= 1_000_000) return `${Number((tokens / 1_000_000).toPrecision(3))}M`;
  if (tokens >= 1000) return `${Math.round(tokens / 1000)}K`;
  return String(tokens);
}

function usd(n: number): string {
  if (n >= 100) return `$${Math.round(n)}`;
  if (n >= 1) return `$${n.toFixed(2)}`;
  return `$${Number(n.toPrecision(2))}`;
}

/** "$2.50 in · $10.00 out per 1M tokens", or "free". */
export function formatPricing(pricing: NonNullable<ModelEntry['pricing']>): string {
  const { promptPerMillionUsd: prompt, completionPerMillionUsd: completion } = pricing;
  if (prompt === 0 && completion === 0) return 'free';
  return `${usd(prompt)} in · ${usd(completion)} out per 1M tokens`;
}

function details(entry: ModelEntry): string {
  const parts: string[] = [];
  if (entry.name !== entry.id) parts.push(entry.name);
  if (entry.contextLength !== undefined) parts.push(`${formatContext(entry.contextLength)} context`);
  if (entry.pricing) parts.push(formatPricing(entry.pricing));
  return parts.join(' · ');
}

const NOT_AN_ID = (text: string) => `"${text}" is not a model id of the form provider/name`;

// ---------------------------------------------------------------------------------------------
// Styles (inline: the picker brings its own, and wraps at 360 px)

const styles = {
  root: { position: 'relative', display: 'block', minWidth: 0, maxWidth: '100%' },
  label: { display: 'block' },
  row: { display: 'flex', gap: '0.25rem', alignItems: 'stretch', minWidth: 0 },
  input: { flex: '1 1 auto', minWidth: 0, width: '100%', boxSizing: 'border-box' },
  toggle: { flex: '0 0 auto', padding: '0 0.6rem' },
  chips: {
    display: 'flex',
    flexWrap: 'wrap',
    gap: '0.25rem',
    listStyle: 'none',
    margin: '0.25rem 0',
    padding: 0,
  },
  chip: {
    display: 'inline-flex',
    alignItems: 'center',
    gap: '0.25rem',
    maxWidth: '100%',
    border: '1px solid var(--line, #d0d7de)',
    borderRadius: '999px',
    padding: '0.1rem 0.1rem 0.1rem 0.6rem',
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace',
    fontSize: '0.85em',
    overflowWrap: 'anywhere',
  },
  chipRemove: {
    border: 0,
    background: 'transparent',
    cursor: 'pointer',
    padding: '0 0.4rem',
    color: 'var(--ink, #1b1f24)',
  },
  popup: {
    position: 'absolute',
    zIndex: 20,
    left: 0,
    right: 0,
    marginTop: '2px',
    background: 'var(--surface, #fff)',
    color: 'var(--ink, #1b1f24)',
    border: '1px solid var(--line, #d0d7de)',
    borderRadius: '6px',
    boxShadow: '0 4px 12px rgba(0,0,0,0.12)',
    maxHeight: '18rem',
    overflowY: 'auto',
  },
  listbox: { listStyle: 'none', margin: 0, padding: 0 },
  groupLabel: {
    padding: '0.3rem 0.6rem',
    fontSize: '0.8em',
    fontWeight: 600,
    color: 'var(--muted, #57606a)',
    background: 'var(--surface-2, #f6f8fa)',
  },
  option: { padding: '0.35rem 0.6rem', cursor: 'pointer', overflowWrap: 'anywhere' },
  active: {
    background: 'var(--info-bg, #ddeaf8)',
    outline: '2px solid var(--accent, #0b5cad)',
    outlineOffset: '-2px',
  },
  id: { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace', fontSize: '0.9em' },
  meta: { display: 'block', fontSize: '0.8em', color: 'var(--muted, #57606a)' },
  note: { margin: 0, padding: '0.3rem 0.6rem', fontSize: '0.8em', color: 'var(--muted, #57606a)' },
  hint: { display: 'block', fontSize: '0.8em', color: 'var(--muted, #57606a)' },
  invalid: { display: 'block', color: 'var(--bad, #b42318)', fontSize: '0.9em' },
  help: { marginTop: '0.25rem', fontSize: '0.85em', overflowWrap: 'anywhere' },
  helpList: { margin: '0.25rem 0', padding: 0 },
} satisfies Record<string, CSSProperties>;

// ---------------------------------------------------------------------------------------------

interface Choice {
  key: string;
  id: string;
  entry: ModelEntry | null;
}

interface Group {
  provider: ModelSource | 'typed';
  label: string;
  choices: Choice[];
  more: number;
}

function matches(entry: ModelEntry, words: string[]): boolean {
  const haystack = `${entry.id} ${entry.name}`.toLowerCase();
  return words.every((w) => haystack.includes(w));
}

export function ModelPicker(props: ModelPickerProps) {
  const { label, name, placeholder, error, disabled } = props;
  const own = useModelCatalogue(props.catalogue === undefined);
  const catalogue = props.catalogue === undefined ? own.catalogue : props.catalogue;
  const failed = props.catalogue === undefined && own.failed;

  const base = useId();
  const inputId = `${base}-input`;
  const listId = `${base}-list`;
  const hintId = `${base}-hint`;
  const problemId = `${base}-problem`;
  const inputRef = useRef<HTMLInputElement>(null);

  const [draft, setDraft] = useState('');
  /** What the list is filtered by; null: the whole list (opened without typing). */
  const [query, setQuery] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const [refusal, setRefusal] = useState<string | null>(null);

  const text = props.multiple ? draft : props.value;
  const roster = props.multiple ? props.value : null;

  const groups = useMemo((): Group[] => {
    const words = (query ?? '').trim().toLowerCase().split(/\s+/).filter(Boolean);
    const out: Group[] = [];
    const typed = (query ?? '').trim();
    const all = catalogue?.models ?? [];
    if (typed && isModelId(typed) && !all.some((m) => m.id === typed)) {
      out.push({
        provider: 'typed',
        label: 'Typed',
        choices: [{ key: 'typed', id: typed, entry: null }],
        more: 0,
      });
    }
    for (const { provider, label: groupLabel } of GROUPS) {
      const found = all.filter((m) => m.provider === provider && matches(m, words));
      if (found.length === 0) continue;
      out.push({
        provider,
        label: groupLabel,
        choices: found
          .slice(0, PER_GROUP)
          .map((entry) => ({ key: `${provider}:${entry.id}`, id: entry.id, entry })),
        more: Math.max(0, found.length - PER_GROUP),
      });
    }
    return out;
  }, [catalogue, query]);
  const choices = useMemo(() => groups.flatMap((g) => g.choices), [groups]);
  const optionId = (index: number) => `${base}-option-${index}`;

  useEffect(() => {
    if (open && active >= 0) {
      document.getElementById(`${base}-option-${active}`)?.scrollIntoView?.({ block: 'nearest' });
    }
  }, [base, open, active]);

  const close = () => {
    setOpen(false);
    setActive(-1);
    setQuery(null);
  };

  /** Roster: adds ids (refusing what max or unique forbid); returns those it could not add. */
  const add = (ids: string[]): string[] => {
    if (!props.multiple) return [];
    const next = [...props.value];
    const left: string[] = [];
    let why: string | null = null;
    for (const id of ids) {
      if (!isModelId(id)) {
        left.push(id);
        why = NOT_AN_ID(id);
      } else if (props.max !== undefined && next.length >= props.max) {
        left.push(id);
        why = `At most ${props.max} models`;
      } else if (props.unique && next.includes(id)) {
        why = `${id} is already in the list`;
      } else next.push(id);
    }
    setRefusal(why);
    if (next.length !== props.value.length) props.onChange(next);
    return left;
  };

  const pick = (choice: Choice) => {
    if (props.multiple) {
      add([choice.id]);
      setDraft('');
    } else {
      props.onChange(choice.id);
    }
    close();
    inputRef.current?.focus();
  };

  /**
   * Roster: adds every complete piece of `value` (split on commas and spaces; with `all`, the last
   * one too) and keeps what is left (the unfinished piece, and pieces that could not be added).
   */
  const commitDraft = (value: string, all: boolean): string => {
    const pieces = value.split(/[\s,]+/);
    const rest = all ? '' : (pieces.pop() ?? '');
    const left = add(pieces.filter(Boolean));
    const next = [...left, rest].filter(Boolean).join(' ');
    setDraft(next);
    return next;
  };

  const onTextChange = (value: string) => {
    setRefusal(null);
    setOpen(true);
    setActive(-1);
    if (props.multiple) {
      const rest = /[\s,]/.test(value) ? commitDraft(value, false) : value;
      if (rest === value) setDraft(value);
      setQuery(rest);
    } else {
      setQuery(value);
      props.onChange(value);
    }
  };

  const move = (to: number) => {
    if (choices.length === 0) return;
    setOpen(true);
    setActive(Math.max(0, Math.min(choices.length - 1, to)));
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    switch (e.key) {
      case 'ArrowDown':
        e.preventDefault();
        if (!open) {
          setOpen(true);
          setActive(e.altKey || choices.length === 0 ? -1 : 0);
        } else move(active + 1);
        return;
      case 'ArrowUp':
        e.preventDefault();
        if (!open) {
          setOpen(true);
          setActive(choices.length - 1);
        } else move(active - 1);
        return;
      case 'Home':
        if (open && active >= 0) {
          e.preventDefault();
          move(0);
        }
        return;
      case 'End':
        if (open && active >= 0) {
          e.preventDefault();
          move(choices.length - 1);
        }
        return;
      case 'Enter':
        if (open && active >= 0 && choices[active]) {
          e.preventDefault();
          pick(choices[active]);
        } else if (props.multiple && draft.trim()) {
          e.preventDefault();
          commitDraft(draft, true);
          close();
        } else if (open) {
          e.preventDefault();
          close();
        }
        return;
      case 'Escape':
        if (open) {
          e.preventDefault();
          e.stopPropagation();
          close();
        }
        return;
      case 'Tab':
        close();
        return;
      case 'Backspace':
        if (props.multiple && draft === '' && props.value.length > 0) {
          props.onChange(props.value.slice(0, -1));
        }
        return;
    }
  };

  const onBlur = () => {
    // A click on an option keeps the focus (mousedown is prevented), so this is leaving the field.
    close();
    if (props.multiple && draft.trim()) commitDraft(draft, true);
  };

  const invalidText =
    !props.multiple && text.trim() !== '' && !isModelId(text.trim()) ? NOT_AN_ID(text.trim()) : null;
  const problem = error ?? refusal ?? invalidText;
  const showHelp =
    catalogue !== null &&
    catalogue.directives.length > 0 &&
    (text.trim().startsWith('sim/') || (roster ?? []).some((id) => id.startsWith('sim/')));
  const sourceNotes = (catalogue?.sources ?? []).filter((s) => s.error !== null);
  const hint = [
    props.multiple && (props.min !== undefined || props.max !== undefined)
      ? `${props.min ?? 0} to ${props.max ?? 'any number of'} models`
      : null,
    failed
      ? 'The model list could not be loaded: type any provider/name id.'
      : 'Type to search, or any provider/name id.',
  ]
    .filter(Boolean)
    .join('. ');

  let index = -1;
  return (
    <div className="model-picker" style={styles.root} data-field={name}>
      <label htmlFor={inputId} style={styles.label}>
        {label}
      </label>
      {roster && roster.length > 0 && (
        <ul className="model-picker-chips" aria-label={`${label}: chosen models`} style={styles.chips}>
          {roster.map((id, i) => (
            <li key={`${id}-${i}`} style={styles.chip}>
              <span>{id}</span>
              <button
                type="button"
                style={styles.chipRemove}
                aria-label={`Remove ${id}`}
                disabled={disabled}
                onClick={() => {
                  if (props.multiple) props.onChange(props.value.filter((_, j) => j !== i));
                  inputRef.current?.focus();
                }}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div style={styles.row}>
        <input
          ref={inputRef}
          id={inputId}
          name={name}
          type="text"
          role="combobox"
          autoComplete="off"
          autoCapitalize="none"
          spellCheck={false}
          aria-autocomplete="list"
          aria-expanded={open}
          aria-controls={listId}
          aria-activedescendant={open && active >= 0 ? optionId(active) : undefined}
          aria-invalid={problem ? true : undefined}
          aria-describedby={problem ? `${problemId} ${hintId}` : hintId}
          value={text}
          placeholder={placeholder}
          disabled={disabled}
          style={styles.input}
          onChange={(e) => onTextChange(e.target.value)}
          onKeyDown={onKeyDown}
          onBlur={onBlur}
          onClick={() => setOpen(true)}
        />
        <button
          type="button"
          tabIndex={-1}
          style={styles.toggle}
          aria-label={`${open ? 'Hide' : 'Show'} models for ${label}`}
          aria-expanded={open}
          aria-controls={listId}
          disabled={disabled}
          onMouseDown={(e) => e.preventDefault()}
          onClick={() => {
            if (open) close();
            else setOpen(true);
            inputRef.current?.focus();
          }}
        >
          ▾
        </button>
      </div>
      <span id={hintId} style={styles.hint}>
        {hint}
      </span>
      {problem && (
        <span id={problemId} className="field-error" role="alert" data-field={name} style={styles.invalid}>
          {problem}
        </span>
      )}
      <div
        style={{ ...styles.popup, display: open ? 'block' : 'none' }}
        onMouseDown={(e) => e.preventDefault()}
      >
        <ul id={listId} role="listbox" aria-label={`Models for ${label}`} style={styles.listbox}>
          {groups.map((group) => (
            <li key={group.provider} role="presentation">
              <div id={`${base}-group-${group.provider}`} role="presentation" style={styles.groupLabel}>
                {group.label}
              </div>
              <ul role="group" aria-labelledby={`${base}-group-${group.provider}`} style={styles.listbox}>
                {group.choices.map((choice) => {
                  index += 1;
                  const mine = index;
                  const meta = choice.entry ? details(choice.entry) : 'Use this id as typed';
                  const chosen = roster?.includes(choice.id) ?? false;
                  return (
                    <li
                      key={choice.key}
                      id={optionId(mine)}
                      role="option"
                      aria-selected={mine === active}
                      style={mine === active ? { ...styles.option, ...styles.active } : styles.option}
                      onMouseMove={() => mine !== active && setActive(mine)}
                      onClick={() => pick(choice)}
                    >
                      <span style={styles.id}>{choice.id}</span>
                      {chosen && <span style={styles.meta}>in the list</span>}
                      {meta && <span style={styles.meta}>{meta}</span>}
                    </li>
                  );
                })}
                {group.more > 0 && (
                  <li role="presentation" style={styles.note}>
                    {group.more} more: keep typing to narrow the list
                  </li>
                )}
              </ul>
            </li>
          ))}
        </ul>
        {choices.length === 0 && (
          <p style={styles.note}>
            {catalogue === null ? 'No model list loaded.' : 'No model matches.'} Any provider/name id can be
            typed.
          </p>
        )}
        {sourceNotes.map((s) => (
          <p key={s.provider} style={styles.note} className="model-picker-source-error">
            {s.error}
            {s.fetchedAt ? ` (showing the list from ${new Date(s.fetchedAt).toLocaleString()})` : ''}
          </p>
        ))}
      </div>
      {showHelp && catalogue && <DirectivesHelp catalogue={catalogue} />}
    </div>
  );
}

/** What may follow `sim/<name>`, from the catalogue. */
export function DirectivesHelp({ catalogue }: { catalogue: ModelsResponse }) {
  return (
    <details className="model-picker-help" style={styles.help}>
      <summary>Simulated model directives</summary>
      <p style={{ margin: '0.25rem 0' }}>
        Add directives after a simulated name to make it misbehave; they combine (
        <code>sim/a:delay500:rank3</code>).
        {catalogue.promptKinds.length > 0 && (
          <>
            {' '}
            <code>@kind</code> limits a fault or delay to one kind of prompt:{' '}
            {catalogue.promptKinds.join(', ')}.
          </>
        )}
      </p>
      <dl style={styles.helpList}>
        {catalogue.directives.map((d) => (
          <div key={d.syntax} style={{ marginBottom: '0.35rem' }}>
            <dt>
              <code>{d.syntax}</code>
            </dt>
            <dd style={{ margin: 0 }}>
              {d.effect} e.g. <code>{d.example}</code>
            </dd>
          </div>
        ))}
      </dl>
    </details>
  );
}

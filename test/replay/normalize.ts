/**
 * Makes a recorded scenario comparable between two runs (and two versions of the code): what is
 * left is what the code decided, not when or under which random id it did it.
 *
 * - ids (uuids) become `#1`, `#2`, … in order of first appearance within the scenario;
 * - timestamps become `<time>` (a null one stays null: whether it is set is behaviour);
 * - durations and latencies become `<ms>` (the same rule for null);
 * - the stack's base URL in any text becomes `<base>`.
 */

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO_TIME = /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}(?::?\d{2})?)?/g;

/** Keys whose value is a point in time. */
const TIME_KEY = /^(at|.*_at|.*[a-z]At|at_.*|time|timestamp|date)$/;
/** Keys whose value is a duration measured on the clock (not a configured one such as timeoutMs). */
const DURATION_KEY =
  /^(response_?time_?ms|latency(_?ms)?|duration(_?ms)?|elapsed(_?ms)?|took(_?ms)?|eta(_?seconds)?|wait(ed)?_?ms|queued_?ms|running_?ms|.*latency.*)$/i;

export function isTimeKey(key: string): boolean {
  return TIME_KEY.test(key);
}

export function isDurationKey(key: string): boolean {
  return DURATION_KEY.test(key);
}

/** Drops the clock: times and durations become placeholders, in keys and in text. */
export function withoutClock(value: unknown, baseUrl: string, key = ''): unknown {
  if (value === null || value === undefined) return value;
  if (key && isTimeKey(key)) return '<time>';
  if (key && isDurationKey(key)) return '<ms>';
  if (value instanceof Date) return '<time>';
  if (typeof value === 'string') {
    let text = value.replace(ISO_TIME, '<time>');
    if (baseUrl) text = text.split(baseUrl).join('<base>');
    return text;
  }
  if (Array.isArray(value)) return value.map((item) => withoutClock(item, baseUrl));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>))
      out[k] = withoutClock(v, baseUrl, k);
    return out;
  }
  return value;
}

/** JSON with object keys sorted: the same value always gives the same text. */
export function canonical(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value as Record<string, unknown>).sort()) {
      out[key] = sortKeys((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}

/** A sort key that ignores ids (so sorting never depends on a random id). */
export function idBlindKey(value: unknown): string {
  return canonical(value).replace(UUID, '<id>');
}

/** Sorts items that settle concurrently by their content, ids ignored; stable for ties. */
export function sortConcurrent<T>(items: T[]): T[] {
  return items
    .map((item, index) => ({ item, index, key: idBlindKey(item) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index))
    .map((entry) => entry.item);
}

/** Replaces every uuid by its ordinal (`#n`, first appearance first), walking keys in sorted order. */
export function withOrdinals(value: unknown, ids = new Map<string, string>()): unknown {
  const ordinal = (id: string) => {
    const lower = id.toLowerCase();
    let name = ids.get(lower);
    if (!name) {
      name = `#${ids.size + 1}`;
      ids.set(lower, name);
    }
    return name;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(UUID, ordinal);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v as Record<string, unknown>).sort()) {
        out[key.replace(UUID, ordinal)] = walk((v as Record<string, unknown>)[key]);
      }
      return out;
    }
    return v;
  };
  return walk(value);
}

/**
 * The `calls` lists of the API (a deliberation's view, the cancel answer, batch exports) are in the
 * order the calls were stored; parallel calls of one stage are stored as they settle, in no fixed
 * order. Each run of consecutive calls of the same stage is sorted by content (ids ignored); the
 * stages keep their order. (A stage's sequential calls — fallback chairmen, a retry — are sorted
 * too; their order is recorded by the events.)
 */
export function withCallsSorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withCallsSorted);
  if (!value || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    out[key] =
      key === 'calls' && Array.isArray(v) ? sortByStageRuns(v.map(withCallsSorted)) : withCallsSorted(v);
  }
  return out;
}

function sortByStageRuns(calls: unknown[]): unknown[] {
  const stageOf = (call: unknown) =>
    call && typeof call === 'object' ? (call as Record<string, unknown>).stage : undefined;
  const out: unknown[] = [];
  let run: unknown[] = [];
  for (const call of calls) {
    if (run.length > 0 && stageOf(run[0]) !== stageOf(call)) {
      out.push(...sortConcurrent(run));
      run = [];
    }
    run.push(call);
  }
  out.push(...sortConcurrent(run));
  return out;
}

/**
 * Events that settle concurrently: the `model_progress` of parallel calls and a jury's
 * `juror_complete` (sent in finishing order). A run of consecutive ones is sorted by content; the
 * events between the runs (the mode's own sequence) keep their order. `seq` is checked to be
 * contiguous and then left out of the concurrent ones (it numbers the finishing order).
 */
export const CONCURRENT_EVENTS = new Set(['model_progress', 'juror_complete']);

/** Events in seq order with each run of concurrent ones sorted (see CONCURRENT_EVENTS). */
export function orderEvents<T extends { type?: unknown }>(events: T[]): T[] {
  const out: T[] = [];
  let run: T[] = [];
  const flush = () => {
    out.push(...sortConcurrent(run));
    run = [];
  };
  for (const event of events) {
    if (CONCURRENT_EVENTS.has(String(event.type))) run.push(event);
    else {
      flush();
      out.push(event);
    }
  }
  flush();
  return out;
}

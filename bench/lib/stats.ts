/** Nearest-rank percentile (p in 0..100) of unsorted numbers; NaN for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export const median = (values: number[]): number => percentile(values, 50);

export const mean = (values: number[]): number =>
  values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;

/** A loop, not Math.max(...values): a spread of some 100 000 values overflows the call stack. */
export function max(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  let highest = -Infinity;
  for (const value of values) if (value > highest) highest = value;
  return highest;
}

/** Rounds for reports: integers stay, others keep `digits` decimals. */
export function round(value: number, digits = 1): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function summary(values: number[], digits = 1) {
  return {
    n: values.length,
    p50: round(percentile(values, 50), digits),
    p95: round(percentile(values, 95), digits),
    max: round(max(values), digits),
    mean: round(mean(values), digits),
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `task` over `items` with at most `limit` at a time; results in input order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
) {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index], index);
    }
  });
  await Promise.all(lanes);
  return results;
}

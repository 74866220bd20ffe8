import {
  DEFAULT_BOOTSTRAP_RESAMPLES,
  DEFAULT_CONFIDENCE,
  DEFAULT_SEED,
  percentileInterval,
  presentValues,
  SINGLE_ITEM_NO_INTERVAL,
  NO_SPREAD_NO_INTERVAL,
  allEqual,
  type BootstrapEstimate,
  type BootstrapOptions,
} from '../bootstrap';
import { SeededRandom } from '../random';

/**
 * `bootstrapMean` of several columns at once, with the same result for each column as
 * `bootstrapMean(column, options)` would give. With one seed, columns with the same number of
 * present values draw the same resampled indices; drawing them once for all such columns saves the
 * random numbers, which dominate the bootstrap's cost (a report's dimensions, a comparison's
 * measures: ten bootstraps over 10 000 items draw 10⁷ indices instead of 10⁸).
 */
export function bootstrapMeans(
  columns: readonly ArrayLike<number | null | undefined>[],
  options: BootstrapOptions = {},
): BootstrapEstimate[] {
  const resamples = options.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES;
  const confidence = options.confidence ?? DEFAULT_CONFIDENCE;
  const seed = options.seed ?? DEFAULT_SEED;
  const present = columns.map((column) => presentValues(column));
  const results = new Array<BootstrapEstimate>(columns.length);
  const byLength = new Map<number, number[]>();
  present.forEach((values, c) => {
    const group = byLength.get(values.length);
    if (group) group.push(c);
    else byLength.set(values.length, [c]);
  });
  for (const [n, group] of byLength) {
    const base = { items: n, resamples, discardedResamples: 0 };
    if (n === 0) {
      for (const c of group) {
        results[c] = { value: null, reason: 'no items', interval: null, intervalReason: null, ...base };
      }
      continue;
    }
    const estimates = group.map((c) => {
      let sum = 0;
      for (const v of present[c]) sum += v;
      return sum / n;
    });
    if (n === 1) {
      group.forEach((c, g) => {
        results[c] = {
          value: estimates[g],
          reason: null,
          interval: null,
          intervalReason: SINGLE_ITEM_NO_INTERVAL,
          ...base,
        };
      });
      continue;
    }
    const replicates = group.map(() => new Float64Array(resamples));
    const indices = new Uint32Array(n);
    const rng = new SeededRandom(seed);
    for (let r = 0; r < resamples; r++) {
      rng.fillInts(indices, n);
      for (let g = 0; g < group.length; g++) {
        const values = present[group[g]];
        let sum = 0;
        for (let i = 0; i < n; i++) sum += values[indices[i]];
        replicates[g][r] = sum / n;
      }
    }
    group.forEach((c, g) => {
      const spread = !allEqual(replicates[g]);
      const bounds = percentileInterval(replicates[g], confidence);
      results[c] = {
        value: estimates[g],
        reason: null,
        interval:
          bounds !== null && spread ? { ...bounds, confidence, method: 'percentile-bootstrap' } : null,
        intervalReason:
          bounds === null
            ? 'the statistic was undefined on every resample'
            : spread
              ? null
              : NO_SPREAD_NO_INTERVAL,
        ...base,
      };
    });
  }
  return results;
}

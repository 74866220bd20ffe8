import { quantileOfSorted } from './quantile';
import { SeededRandom, type Seed } from './random';
import { checkConfidence, type EstimateWithInterval, isPresent } from './result';

export interface BootstrapOptions {
  /** Number of resamples; default 1000. */
  readonly resamples?: number;
  /** Default 0.95. */
  readonly confidence?: number;
  /** Fixed seed so a report is identical each time it is computed; default 'conclave'. */
  readonly seed?: Seed;
}

export const DEFAULT_BOOTSTRAP_RESAMPLES = 1000;
export const DEFAULT_CONFIDENCE = 0.95;
export const DEFAULT_SEED = 'conclave';
/** One item resampled is that item every time: a zero-width "interval" would claim certainty. */
export const SINGLE_ITEM_NO_INTERVAL = 'a single item gives no interval';
/** Every resample gave the same value: a zero-width "interval" would claim a certainty the data lacks. */
export const NO_SPREAD_NO_INTERVAL =
  'every resample gave the same value (the items do not vary), so resampling gives no interval';

export type BootstrapEstimate = EstimateWithInterval & {
  /** Items the statistic was computed over. */
  readonly items: number;
  readonly resamples: number;
  /** Resamples on which the statistic was undefined (e.g. a model absent from every drawn item). */
  readonly discardedResamples: number;
};

/**
 * A statistic over a multiset of items given by index: `indices` holds item numbers in [0, n),
 * possibly repeated. Returns null when undefined for that resample.
 */
export type ItemStatistic = (indices: Uint32Array) => number | null;

interface ResolvedOptions {
  resamples: number;
  confidence: number;
  seed: Seed;
}

function resolve(options: BootstrapOptions): ResolvedOptions {
  const resamples = options.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES;
  if (!Number.isInteger(resamples) || resamples < 1) {
    throw new RangeError(`resamples must be a positive integer, got ${resamples}`);
  }
  const confidence = options.confidence ?? DEFAULT_CONFIDENCE;
  checkConfidence(confidence);
  return { resamples, confidence, seed: options.seed ?? DEFAULT_SEED };
}

/**
 * Percentile interval from bootstrap replicates: the (1−c)/2 and (1+c)/2 type-7 quantiles. Sorts
 * `replicates` in place.
 */
export function percentileInterval(
  replicates: Float64Array,
  confidence: number,
): { lower: number; upper: number } | null {
  checkConfidence(confidence);
  replicates.sort();
  const lower = quantileOfSorted(replicates, (1 - confidence) / 2);
  const upper = quantileOfSorted(replicates, (1 + confidence) / 2);
  return lower === null || upper === null ? null : { lower, upper };
}

/**
 * Nonparametric bootstrap over items (Efron 1979) with a percentile interval: draw n item indices
 * with replacement, recompute the statistic, repeat. Resampling whole items keeps everything
 * measured on one item (all jurors, both batches of a comparison) together, which is what makes
 * the interval honest about item-to-item variation. The point estimate is the statistic on the
 * original items. Memory is O(n) for one index buffer plus O(resamples) replicates.
 */
export function bootstrapItems(
  itemCount: number,
  statistic: ItemStatistic,
  options: BootstrapOptions = {},
): BootstrapEstimate {
  const { resamples, confidence, seed } = resolve(options);
  const base = { items: itemCount, resamples, discardedResamples: 0 };
  if (!Number.isInteger(itemCount) || itemCount < 0) {
    throw new RangeError(`itemCount must be a non-negative integer, got ${itemCount}`);
  }
  if (itemCount === 0) {
    return { value: null, reason: 'no items', interval: null, intervalReason: null, ...base };
  }
  const indices = new Uint32Array(itemCount);
  for (let i = 0; i < itemCount; i++) indices[i] = i;
  const estimate = statistic(indices);
  if (!isPresent(estimate)) {
    return {
      value: null,
      reason: 'the statistic is undefined on these items',
      interval: null,
      intervalReason: null,
      ...base,
    };
  }
  if (itemCount < 2) {
    return {
      value: estimate,
      reason: null,
      interval: null,
      intervalReason: SINGLE_ITEM_NO_INTERVAL,
      ...base,
    };
  }
  const rng = new SeededRandom(seed);
  const replicates = new Float64Array(resamples);
  let kept = 0;
  for (let r = 0; r < resamples; r++) {
    rng.fillInts(indices, itemCount);
    const value = statistic(indices);
    if (isPresent(value)) replicates[kept++] = value;
  }
  const discardedResamples = resamples - kept;
  const bounds = kept === 0 ? null : percentileInterval(replicates.subarray(0, kept), confidence);
  if (bounds === null) {
    return {
      value: estimate,
      reason: null,
      interval: null,
      intervalReason: 'the statistic was undefined on every resample',
      items: itemCount,
      resamples,
      discardedResamples,
    };
  }
  if (allEqual(replicates.subarray(0, kept))) {
    return {
      value: estimate,
      reason: null,
      interval: null,
      intervalReason: NO_SPREAD_NO_INTERVAL,
      items: itemCount,
      resamples,
      discardedResamples,
    };
  }
  return {
    value: estimate,
    reason: null,
    interval: { ...bounds, confidence, method: 'percentile-bootstrap' },
    intervalReason: null,
    items: itemCount,
    resamples,
    discardedResamples,
  };
}

/** Whether every replicate is the same number (resampling showed no spread at all). */
export function allEqual(values: ArrayLike<number>): boolean {
  for (let i = 1; i < values.length; i++) if (values[i] !== values[0]) return false;
  return true;
}

/** Copies the present (finite) values into a compact array; missing items are dropped. */
export function presentValues(values: ArrayLike<number | null | undefined>): Float64Array {
  let count = 0;
  for (let i = 0; i < values.length; i++) if (isPresent(values[i])) count++;
  const out = new Float64Array(count);
  let j = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (isPresent(v)) out[j++] = v;
  }
  return out;
}

function meanAt(values: Float64Array, indices: Uint32Array): number {
  let sum = 0;
  for (let i = 0; i < indices.length; i++) sum += values[indices[i]];
  return sum / indices.length;
}

/**
 * Bootstrap interval for the mean of per-item values (scores, ranks, 0/1 outcomes). Missing values
 * (null, NaN, ±Infinity) are dropped first, so the interval is conditional on the items that have a
 * value; `items` reports how many that was.
 */
export function bootstrapMean(
  values: ArrayLike<number | null | undefined>,
  options: BootstrapOptions = {},
): BootstrapEstimate {
  const present = presentValues(values);
  return bootstrapItems(present.length, (indices) => meanAt(present, indices), options);
}

/** A statistic over a resampled column of values (the column is a reused buffer: do not keep it). */
export type SampleStatistic = (values: Float64Array) => number | null;

export interface PairedBootstrapOptions extends BootstrapOptions {
  /** Statistic compared between the two samples; default: the mean. */
  readonly statistic?: SampleStatistic;
}

/**
 * Paired bootstrap for statistic(a) − statistic(b) when a[i] and b[i] were measured on the same
 * item i (batch A and batch B on the same questions). Each resample draws items, keeping both
 * halves of a pair together, so the shared item difficulty cancels and the interval is much
 * narrower than comparing two independent intervals. Pairs with a missing half are dropped. With
 * the default statistic the value is the mean of the per-item differences.
 */
export function pairedBootstrap(
  a: ArrayLike<number | null | undefined>,
  b: ArrayLike<number | null | undefined>,
  options: PairedBootstrapOptions = {},
): BootstrapEstimate {
  if (a.length !== b.length) {
    throw new RangeError(`paired samples must have the same length, got ${a.length} and ${b.length}`);
  }
  let count = 0;
  for (let i = 0; i < a.length; i++) if (isPresent(a[i]) && isPresent(b[i])) count++;
  const left = new Float64Array(count);
  const right = new Float64Array(count);
  let j = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (isPresent(x) && isPresent(y)) {
      left[j] = x;
      right[j] = y;
      j++;
    }
  }
  const statistic = options.statistic;
  if (statistic === undefined) {
    const differences = new Float64Array(count);
    for (let i = 0; i < count; i++) differences[i] = left[i] - right[i];
    return bootstrapItems(count, (indices) => meanAt(differences, indices), options);
  }
  const bufferA = new Float64Array(count);
  const bufferB = new Float64Array(count);
  return bootstrapItems(
    count,
    (indices) => {
      for (let i = 0; i < indices.length; i++) {
        bufferA[i] = left[indices[i]];
        bufferB[i] = right[indices[i]];
      }
      const sa = statistic(bufferA);
      const sb = statistic(bufferB);
      return isPresent(sa) && isPresent(sb) ? sa - sb : null;
    },
    options,
  );
}

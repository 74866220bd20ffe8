import {
  DEFAULT_BOOTSTRAP_RESAMPLES,
  DEFAULT_CONFIDENCE,
  DEFAULT_SEED,
  percentileInterval,
  allEqual,
  type BootstrapOptions,
} from '../bootstrap';
import { SeededRandom } from '../random';
import type { Interval } from '../result';

/**
 * Item-bootstrap intervals for the agreement coefficients, which the streaming accumulators
 * (`FleissKappaAccumulator`, `KrippendorffAlphaAccumulator`) compute without keeping items. Each
 * keeps a few numbers per item (the item's contribution to every sum the coefficient is made of),
 * so a resample recomputes the coefficient from sums over the drawn items: the item is the unit,
 * all ratings on one item stay together. Every item is recorded (one without ratings as zeros), so
 * coefficients over the same items can share one draw of resampled indices
 * (`bootstrapStatistics`).
 */

/** A growable column of doubles. */
class Column {
  private data = new Float64Array(64);
  length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }

  get values(): Float64Array {
    return this.data;
  }
}

/** Fleiss' κ (Gwet's generalisation for varying raters, as `FleissKappaAccumulator`) per item. */
export class FleissKappaItems {
  /** Per item: its pairwise agreement; NaN with fewer than two ratings. */
  private readonly agreement = new Column();
  /** Per item: 1 when it has a rating. */
  private readonly rated = new Column();
  /** Per item and category: n_ij / n_i (0 without ratings), row-major. */
  private readonly shares = new Column();
  private withRatings = 0;

  constructor(private readonly categories: readonly string[]) {}

  /** Items recorded (the index space of `kappa`). */
  get size(): number {
    return this.agreement.length;
  }

  /** Items with at least one rating. */
  get items(): number {
    return this.withRatings;
  }

  /** One item's ratings (null for a rater who gave none); a rating outside the categories is ignored. */
  addRatings(ratings: Iterable<string | null | undefined>): void {
    const counts = new Array<number>(this.categories.length).fill(0);
    let n = 0;
    for (const rating of ratings) {
      const c = rating === null || rating === undefined ? -1 : this.categories.indexOf(rating);
      if (c < 0) continue;
      counts[c]++;
      n++;
    }
    let pairs = 0;
    for (const count of counts) pairs += count * (count - 1);
    this.agreement.push(n >= 2 ? pairs / (n * (n - 1)) : NaN);
    this.rated.push(n > 0 ? 1 : 0);
    if (n > 0) this.withRatings++;
    for (const count of counts) this.shares.push(n > 0 ? count / n : 0);
  }

  /** κ over the items given by index (as the accumulator computes it); null where it is undefined. */
  kappa(indices: ArrayLike<number>): number | null {
    const k = this.categories.length;
    const agreement = this.agreement.values;
    const rated = this.rated.values;
    const shares = this.shares.values;
    const shareSums = new Float64Array(k);
    let agreementSum = 0;
    let pairable = 0;
    let withRatings = 0;
    for (let i = 0; i < indices.length; i++) {
      const item = indices[i];
      if (rated[item] === 0) continue;
      withRatings++;
      const a = agreement[item];
      if (a === a) {
        agreementSum += a;
        pairable++;
      }
      const row = item * k;
      for (let c = 0; c < k; c++) shareSums[c] += shares[row + c];
    }
    if (pairable === 0) return null;
    let expected = 0;
    let used = 0;
    for (let c = 0; c < k; c++) {
      const share = shareSums[c] / withRatings;
      expected += share * share;
      if (share > 0) used++;
    }
    if (used < 2) return null;
    return (agreementSum / pairable - expected) / (1 - expected);
  }
}

/**
 * Krippendorff's α at the interval level per unit. With δ = (c − k)², the observed disagreement is
 * Σ_u 2/(m_u − 1) Σ_{i<j} (x_i − x_j)² and the expected one 2n Σ (x − x̄)² over all n pairable
 * values, so each unit keeps m_u, Σx, Σx² and its own term (zeros for a unit with fewer than two).
 */
export class IntervalAlphaUnits {
  /** Per unit: m, Σx, Σx², observed term. */
  private readonly columns = new Column();
  private recorded = 0;
  private pairable = 0;

  /** Units recorded (the index space of `alpha`). */
  get size(): number {
    return this.recorded;
  }

  /** Units with two or more values. */
  get units(): number {
    return this.pairable;
  }

  /** One unit's values; missing ones (null, NaN) are skipped; a unit with fewer than two is not pairable. */
  addUnit(values: Iterable<number | null | undefined>): void {
    let m = 0;
    let sum = 0;
    let squares = 0;
    for (const v of values) {
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      m++;
      sum += v;
      squares += v * v;
    }
    this.recorded++;
    if (m < 2) {
      for (let j = 0; j < 4; j++) this.columns.push(0);
      return;
    }
    this.pairable++;
    // Σ_{i<j} (x_i − x_j)² = m Σx² − (Σx)²
    const pairwise = m * squares - sum * sum;
    this.columns.push(m);
    this.columns.push(sum);
    this.columns.push(squares);
    this.columns.push((2 * pairwise) / (m - 1));
  }

  /** α over the units given by index; null with fewer than two distinct pairable units or no variation. */
  alpha(indices: ArrayLike<number>): number | null {
    const data = this.columns.values;
    let n = 0;
    let sum = 0;
    let squares = 0;
    let observed = 0;
    let first = -1;
    let second = false;
    for (let i = 0; i < indices.length; i++) {
      const u = indices[i] * 4;
      const m = data[u];
      if (m === 0) continue;
      n += m;
      sum += data[u + 1];
      squares += data[u + 2];
      observed += data[u + 3];
      if (first < 0) first = u;
      else if (u !== first) second = true;
    }
    // One unit drawn several times is still one unit: α needs two (the accumulator's rule).
    if (!second) return null;
    const spread = squares - (sum * sum) / n;
    if (!(spread > 1e-12 * squares)) return null;
    return 1 - ((n - 1) * observed) / (2 * n * spread);
  }
}

/**
 * Percentile intervals of several statistics over the same `itemCount` items, drawing each
 * resample's indices once for all of them (the random numbers are most of a bootstrap's cost).
 * A resample on which a statistic is undefined is left out of that statistic's interval; null
 * when it is undefined on every resample or there are fewer than two items.
 */
export function bootstrapStatistics(
  itemCount: number,
  statistics: readonly ((indices: Uint32Array) => number | null)[],
  options: BootstrapOptions = {},
): (Interval | null)[] {
  const resamples = options.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES;
  const confidence = options.confidence ?? DEFAULT_CONFIDENCE;
  if (itemCount < 2 || statistics.length === 0) return statistics.map(() => null);
  const replicates = statistics.map(() => new Float64Array(resamples));
  const kept = statistics.map(() => 0);
  const indices = new Uint32Array(itemCount);
  const rng = new SeededRandom(options.seed ?? DEFAULT_SEED);
  for (let r = 0; r < resamples; r++) {
    rng.fillInts(indices, itemCount);
    statistics.forEach((statistic, s) => {
      const value = statistic(indices);
      if (value !== null && Number.isFinite(value)) replicates[s][kept[s]++] = value;
    });
  }
  return replicates.map((values, s) => {
    // No spread (every resample gave the same value) is no interval, not a zero-width one.
    if (kept[s] === 0 || allEqual(values.subarray(0, kept[s]))) return null;
    const bounds = percentileInterval(values.subarray(0, kept[s]), confidence);
    return bounds === null ? null : { ...bounds, confidence, method: 'percentile-bootstrap' };
  });
}

import { isPresent } from './result';

export interface RunningStatsResult {
  readonly count: number;
  /** Values that were null, undefined or not finite. */
  readonly missing: number;
  readonly mean: number | null;
  /** Sample variance (n − 1 denominator); null below two values. */
  readonly variance: number | null;
  readonly standardDeviation: number | null;
  /** Standard error of the mean; null below two values. */
  readonly standardError: number | null;
  readonly min: number | null;
  readonly max: number | null;
}

/**
 * Mean and variance in one pass, O(1) memory (Welford 1962). The naive sum-of-squares formula
 * loses every digit when values sit far from zero (timestamps, costs in micro-dollars); Welford's
 * update does not. `merge` combines partial results (Chan et al. 1979), e.g. per page of rows.
 */
export class RunningStats {
  private n = 0;
  private missingCount = 0;
  private meanValue = 0;
  private m2 = 0;
  private minValue = Infinity;
  private maxValue = -Infinity;

  add(value: number | null | undefined): void {
    if (!isPresent(value)) {
      this.missingCount++;
      return;
    }
    this.n++;
    const delta = value - this.meanValue;
    this.meanValue += delta / this.n;
    this.m2 += delta * (value - this.meanValue);
    if (value < this.minValue) this.minValue = value;
    if (value > this.maxValue) this.maxValue = value;
  }

  /** Folds another accumulator's data into this one, as if its values had been added here. */
  merge(other: RunningStats): void {
    if (other.n === 0) {
      this.missingCount += other.missingCount;
      return;
    }
    const n = this.n + other.n;
    const delta = other.meanValue - this.meanValue;
    this.m2 += other.m2 + (delta * delta * this.n * other.n) / n;
    this.meanValue += (delta * other.n) / n;
    this.n = n;
    this.missingCount += other.missingCount;
    this.minValue = Math.min(this.minValue, other.minValue);
    this.maxValue = Math.max(this.maxValue, other.maxValue);
  }

  get count(): number {
    return this.n;
  }

  get mean(): number | null {
    return this.n === 0 ? null : this.meanValue;
  }

  result(): RunningStatsResult {
    const variance = this.n < 2 ? null : Math.max(0, this.m2 / (this.n - 1));
    const sd = variance === null ? null : Math.sqrt(variance);
    return {
      count: this.n,
      missing: this.missingCount,
      mean: this.mean,
      variance,
      standardDeviation: sd,
      standardError: sd === null ? null : sd / Math.sqrt(this.n),
      min: this.n === 0 ? null : this.minValue,
      max: this.n === 0 ? null : this.maxValue,
    };
  }
}

export interface CategoryShare<K extends string | number> {
  readonly category: K;
  readonly count: number;
  /** count / total; null when nothing was counted at all. */
  readonly share: number | null;
}

export interface CategoryDistribution<K extends string | number> {
  readonly total: number;
  readonly missing: number;
  readonly categories: readonly CategoryShare<K>[];
}

/**
 * Counts per category (verdicts, score values, error kinds). Categories given up front are always
 * listed, in that order, even with a zero count, so a chart's axis does not depend on the data;
 * others follow in order of first appearance.
 */
export class CategoryCounts<K extends string | number = string> {
  private readonly counts = new Map<K, number>();
  private totalCount = 0;
  private missingCount = 0;

  constructor(categories: readonly K[] = []) {
    for (const category of categories) this.counts.set(category, 0);
  }

  add(category: K | null | undefined, weight = 1): void {
    if (category === null || category === undefined) {
      this.missingCount += weight;
      return;
    }
    this.counts.set(category, (this.counts.get(category) ?? 0) + weight);
    this.totalCount += weight;
  }

  count(category: K): number {
    return this.counts.get(category) ?? 0;
  }

  get total(): number {
    return this.totalCount;
  }

  result(): CategoryDistribution<K> {
    const total = this.totalCount;
    return {
      total,
      missing: this.missingCount,
      categories: [...this.counts].map(([category, count]) => ({
        category,
        count,
        share: total === 0 ? null : count / total,
      })),
    };
  }
}

export interface Ranked<T> {
  readonly score: number;
  readonly item: T;
}

/**
 * Keeps the k entries with the highest score seen so far ("the items with the most disagreement")
 * without holding the rest. On equal scores the earlier entry stays ahead. O(k) per insert, meant
 * for small k (tens).
 */
export class TopK<T> {
  private readonly entries: Ranked<T>[] = [];

  constructor(private readonly k: number) {
    if (!Number.isInteger(k) || k < 0) throw new RangeError(`k must be a non-negative integer, got ${k}`);
  }

  /** Ignores entries whose score is not a finite number. */
  add(score: number, item: T): void {
    if (!Number.isFinite(score) || this.k === 0) return;
    if (this.entries.length === this.k && score <= this.entries[this.entries.length - 1].score) return;
    let at = this.entries.length;
    while (at > 0 && this.entries[at - 1].score < score) at--;
    this.entries.splice(at, 0, { score, item });
    if (this.entries.length > this.k) this.entries.pop();
  }

  /** Highest score first. */
  result(): readonly Ranked<T>[] {
    return [...this.entries];
  }
}

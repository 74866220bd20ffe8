import { bootstrapItems, type BootstrapEstimate, type BootstrapOptions } from '../bootstrap';

/**
 * Item-bootstrap intervals for the agreement coefficients, which the streaming accumulators
 * (`FleissKappaAccumulator`, `KrippendorffAlphaAccumulator`) compute without keeping items. Each
 * keeps a few numbers per item (the item's contribution to every sum the coefficient is made of),
 * so a resample recomputes the coefficient from sums over the drawn items: the items are the unit,
 * all ratings on one item stay together.
 */

/** Fleiss' κ (Gwet's generalisation for varying raters, as `FleissKappaAccumulator`) per item. */
export class FleissKappaItems {
  /** Per item with a rating: its pairwise agreement (NaN with fewer than two ratings). */
  private readonly agreement: number[] = [];
  /** Per item with a rating and category: n_ij / n_i, row-major (categories per item). */
  private readonly shares: number[] = [];

  constructor(private readonly categories: readonly string[]) {}

  /** Items with at least one rating (the bootstrap's items). */
  get items(): number {
    return this.agreement.length;
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
    if (n === 0) return;
    let pairs = 0;
    for (const count of counts) pairs += count * (count - 1);
    this.agreement.push(n >= 2 ? pairs / (n * (n - 1)) : NaN);
    for (const count of counts) this.shares.push(count / n);
  }

  /** κ over the items given by index (as the accumulator computes it); null where it is undefined. */
  kappa(indices: ArrayLike<number>): number | null {
    const k = this.categories.length;
    const shareSums = new Float64Array(k);
    let agreementSum = 0;
    let rated = 0;
    for (let i = 0; i < indices.length; i++) {
      const item = indices[i];
      const a = this.agreement[item];
      if (!Number.isNaN(a)) {
        agreementSum += a;
        rated++;
      }
      for (let c = 0; c < k; c++) shareSums[c] += this.shares[item * k + c];
    }
    if (rated === 0) return null;
    let expected = 0;
    let used = 0;
    for (let c = 0; c < k; c++) {
      const share = shareSums[c] / indices.length;
      expected += share * share;
      if (share > 0) used++;
    }
    if (used < 2) return null;
    return (agreementSum / rated - expected) / (1 - expected);
  }

  bootstrap(options: BootstrapOptions): BootstrapEstimate {
    return bootstrapItems(this.agreement.length, (indices) => this.kappa(indices), options);
  }
}

/**
 * Krippendorff's α at the interval level per unit with two or more values. With δ = (c − k)², the
 * observed disagreement is Σ_u 2/(m_u − 1) Σ_{i<j} (x_i − x_j)² and the expected one
 * 2n Σ (x − x̄)² over all n pairable values, so each unit keeps m_u, Σx, Σx² and its own term.
 */
export class IntervalAlphaUnits {
  private readonly counts: number[] = [];
  private readonly sums: number[] = [];
  private readonly squares: number[] = [];
  private readonly observed: number[] = [];

  /** One unit's values; missing ones (null, NaN) are skipped; a unit with fewer than two is not pairable. */
  addUnit(values: Iterable<number | null | undefined>): void {
    const present: number[] = [];
    for (const v of values) if (typeof v === 'number' && Number.isFinite(v)) present.push(v);
    const m = present.length;
    if (m < 2) return;
    let sum = 0;
    let squares = 0;
    for (const v of present) {
      sum += v;
      squares += v * v;
    }
    // Σ_{i<j} (x_i − x_j)² = m Σx² − (Σx)²
    const pairwise = m * squares - sum * sum;
    this.counts.push(m);
    this.sums.push(sum);
    this.squares.push(squares);
    this.observed.push((2 * pairwise) / (m - 1));
  }

  get units(): number {
    return this.counts.length;
  }

  /** α over the units given by index; null with fewer than two units or no variation. */
  alpha(indices: ArrayLike<number>): number | null {
    let n = 0;
    let sum = 0;
    let squares = 0;
    let observed = 0;
    let distinct = 0;
    const first = indices.length > 0 ? indices[0] : -1;
    for (let i = 0; i < indices.length; i++) {
      const u = indices[i];
      n += this.counts[u];
      sum += this.sums[u];
      squares += this.squares[u];
      observed += this.observed[u];
      if (u !== first) distinct++;
    }
    // One unit drawn n times is still one unit: α needs two (the accumulator's rule).
    if (distinct === 0) return null;
    const spread = squares - (sum * sum) / n;
    const expected = 2 * n * spread;
    if (!(spread > 1e-12 * squares)) return null;
    return 1 - ((n - 1) * observed) / expected;
  }

  bootstrap(options: BootstrapOptions): BootstrapEstimate {
    return bootstrapItems(this.counts.length, (indices) => this.alpha(indices), options);
  }
}

import type { Estimate } from './result';

export type FleissKappaResult = Estimate & {
  /** Items fed in. */
  readonly items: number;
  /** Items with at least two ratings: the only ones that show agreement or disagreement. */
  readonly ratedItems: number;
  /** Smallest and largest number of ratings on an item with at least one rating (null if none). */
  readonly ratersPerItem: { readonly min: number; readonly max: number } | null;
  /** True when every item had the same number of ratings: the value is then exactly Fleiss's κ. */
  readonly fixedRaters: boolean;
  /** P̄, mean agreement between pairs of raters on an item. */
  readonly observedAgreement: number | null;
  /** P̄_e, agreement expected from the category shares alone. */
  readonly expectedAgreement: number | null;
  /** π_j, the overall share of each category (mean over items of its share on the item). */
  readonly categories: readonly { readonly category: string; readonly share: number }[];
};

/**
 * Fleiss' κ (Fleiss 1971) for nominal ratings by several raters per item, e.g. jurors' verdicts,
 * fed one item at a time; memory is one running sum per category.
 *
 * Items may have different numbers of ratings (a juror failed). Then the generalisation of Gwet
 * (Handbook of Inter-Rater Reliability, 4th ed.; as coded in irrCAC's fleiss.kappa.raw) is used:
 * observed agreement averages Σ_j n_ij(n_ij − 1) / (n_i(n_i − 1)) over items with n_i ≥ 2, and
 * chance agreement uses π_j = mean over items with n_i ≥ 1 of n_ij / n_i. With a fixed number of
 * raters per item both reduce exactly to Fleiss's formulas; `fixedRaters` says which case applied.
 */
export class FleissKappaAccumulator {
  private readonly shareSums = new Map<string, number>();
  private itemCount = 0;
  private itemsWithRatings = 0;
  private ratedItemCount = 0;
  private agreementSum = 0;
  private minRaters = Infinity;
  private maxRaters = 0;

  /** Categories given up front are listed in this order in the result even if never used. */
  constructor(categories: readonly string[] = []) {
    for (const category of categories) this.shareSums.set(category, 0);
  }

  /** One item's ratings, one per rater; null/undefined for a rater who gave none. */
  addRatings(ratings: Iterable<string | null | undefined>): void {
    const counts = new Map<string, number>();
    for (const rating of ratings) {
      if (rating === null || rating === undefined) continue;
      counts.set(rating, (counts.get(rating) ?? 0) + 1);
    }
    this.addCounts(counts);
  }

  /** One item as counts per category (n_ij); non-positive counts are ignored. */
  addCounts(counts: ReadonlyMap<string, number> | Readonly<Record<string, number>>): void {
    const entries: [string, number][] = counts instanceof Map ? [...counts] : Object.entries(counts);
    this.itemCount++;
    let ni = 0;
    let pairsAgreeing = 0;
    for (const [, count] of entries) {
      if (!(count > 0)) continue;
      if (!Number.isInteger(count)) throw new RangeError(`category counts must be integers, got ${count}`);
      ni += count;
      pairsAgreeing += count * (count - 1);
    }
    if (ni === 0) return;
    this.itemsWithRatings++;
    this.minRaters = Math.min(this.minRaters, ni);
    this.maxRaters = Math.max(this.maxRaters, ni);
    for (const [category, count] of entries) {
      if (count > 0) this.shareSums.set(category, (this.shareSums.get(category) ?? 0) + count / ni);
    }
    if (ni >= 2) {
      this.ratedItemCount++;
      this.agreementSum += pairsAgreeing / (ni * (ni - 1));
    }
  }

  result(): FleissKappaResult {
    const withRatings = this.itemsWithRatings;
    const categories = [...this.shareSums].map(([category, sum]) => ({
      category,
      share: withRatings === 0 ? 0 : sum / withRatings,
    }));
    const base = {
      items: this.itemCount,
      ratedItems: this.ratedItemCount,
      ratersPerItem: withRatings === 0 ? null : { min: this.minRaters, max: this.maxRaters },
      fixedRaters: withRatings > 0 && this.minRaters === this.maxRaters,
      categories,
    };
    if (this.ratedItemCount === 0) {
      return {
        value: null,
        reason:
          this.itemCount === 0 ? 'no items' : 'no item has two or more ratings, so nothing can be compared',
        ...base,
        observedAgreement: null,
        expectedAgreement: null,
      };
    }
    const observed = this.agreementSum / this.ratedItemCount;
    let expected = 0;
    for (const { share } of categories) expected += share * share;
    const used = categories.filter(({ share }) => share > 0).length;
    if (used < 2) {
      return {
        value: null,
        reason:
          'every rating is the same category: agreement is total but κ is undefined (no chance baseline)',
        ...base,
        observedAgreement: observed,
        expectedAgreement: expected,
      };
    }
    return {
      value: (observed - expected) / (1 - expected),
      reason: null,
      ...base,
      observedAgreement: observed,
      expectedAgreement: expected,
    };
  }
}

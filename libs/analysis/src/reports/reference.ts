import type {
  ReportCohenKappa,
  ReportItemLink,
  ReportNumericReference,
  ReportReferenceAgreement,
  ReportReferenceExclusions,
} from '@conclave/contracts';
import { bootstrapMean, type BootstrapOptions } from '../bootstrap';
import { CohenKappaAccumulator } from '../cohen';
import { interpretKappa } from '../interpret';
import { twoSidedT } from '../inference/student-t';
import { NumericSample } from '../quantile';
import { bootstrapFigure, quantiles, rate, reportInterval } from './figures';
import { itemLink, type ReportItem } from './rows';

const MISMATCHES_SHOWN = 20;
const EXCLUDED_SHOWN = 20;

/** Why an item with a reference is not compared. */
export type ReferenceExclusion = 'failed' | 'cancelled' | 'unfinished' | 'noOutcome' | 'unusableReference';

const EXCLUSION_REASON: Record<ReferenceExclusion, string> = {
  failed: 'the item failed',
  cancelled: 'the item was cancelled',
  unfinished: 'the item is still queued or running',
  noOutcome: 'the item has no outcome to compare',
  unusableReference: 'the reference cannot be compared with this outcome',
};

/** Whether an item carries a reference at all (a blank text cell does not). */
export const hasReference = (reference: string | number | null | undefined): boolean =>
  reference !== null &&
  reference !== undefined &&
  !(typeof reference === 'string' && reference.trim() === '') &&
  !(typeof reference === 'number' && !Number.isFinite(reference));

/**
 * Counts of a section's reference over ALL the items of its mode (issue 36): items with and without
 * one in every state, and those with one that the section does not compare, named with the reason.
 */
export class ReferenceCounts {
  withReference = 0;
  without = 0;
  private readonly excluded: Record<ReferenceExclusion, number> = {
    failed: 0,
    cancelled: 0,
    unfinished: 0,
    noOutcome: 0,
    unusableReference: 0,
  };
  private readonly excludedItems: (ReportItemLink & { reason: string })[] = [];

  /** An item the section does not compare: counted by reference, and named when it has one. */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    if (!hasReference(item.reference)) {
      this.without++;
      return;
    }
    this.withReference++;
    this.exclude(item, reason);
  }

  /**
   * A complete item, counted: compared (its reference as the section reads it, and its outcome)
   * when it has both, else null with the reason (no readable reference, or no outcome).
   */
  admit<Reference, Outcome>(
    item: ReportItem,
    reference: Reference | null,
    outcome: Outcome | null,
  ): { reference: Reference; outcome: Outcome } | null {
    if (reference === null) {
      if (hasReference(item.reference)) this.addExcluded(item, 'unusableReference');
      else this.without++;
      return null;
    }
    this.withReference++;
    if (outcome === null) {
      this.exclude(item, 'noOutcome');
      return null;
    }
    return { reference, outcome };
  }

  /** An item already counted as carrying a reference that cannot be compared. */
  exclude(item: ReportItem, reason: ReferenceExclusion): void {
    this.excluded[reason]++;
    if (this.excludedItems.length < EXCLUDED_SHOWN)
      this.excludedItems.push({ ...itemLink(item), reason: EXCLUSION_REASON[reason] });
  }

  result(): ReportReferenceExclusions {
    const e = this.excluded;
    return {
      count: e.failed + e.cancelled + e.unfinished + e.noOutcome + e.unusableReference,
      ...e,
      items: [...this.excludedItems],
    };
  }
}

/** Two sections' exclusions as one (a Delphi batch mixing numeric and qualitative questions). */
export function mergeExclusions(
  a: ReportReferenceExclusions,
  b: ReportReferenceExclusions,
): ReportReferenceExclusions {
  return {
    count: a.count + b.count,
    failed: a.failed + b.failed,
    cancelled: a.cancelled + b.cancelled,
    unfinished: a.unfinished + b.unfinished,
    noOutcome: a.noOutcome + b.noOutcome,
    unusableReference: a.unusableReference + b.unusableReference,
    items: [...a.items, ...b.items].sort((x, y) => x.index - y.index).slice(0, EXCLUDED_SHOWN),
  };
}

/**
 * Agreement of the panel's outcome with the items' `reference` labels (a verdict, an expected
 * winner, an expected answer): share matching, Cohen's κ with its interval, the confusion matrix
 * (rows: reference, columns: panel). Counts are over every item of the mode: complete items come
 * through `add`, the others through `addExcluded`.
 */
export class ReferenceTracker {
  private readonly cohen: CohenKappaAccumulator;
  private readonly counts = new ReferenceCounts();
  private matched = 0;
  private compared = 0;
  private readonly mismatches: ReportReferenceAgreement['mismatches'] = [];

  constructor(
    private readonly comparedWith: string,
    categories: readonly string[] = [],
  ) {
    this.cohen = new CohenKappaAccumulator(categories, { a: 'the reference', b: comparedWith });
  }

  /**
   * A complete item; `given` is its reference as the section reads it, null when it carries
   * none or one the section cannot read (then counted as not compared, with the reason).
   */
  add(item: ReportItem, given: string | null, panelOutcome: string | null): void {
    const compared = this.counts.admit(item, given, panelOutcome);
    if (!compared) return;
    const { reference, outcome } = compared;
    this.compared++;
    this.cohen.add(reference, outcome);
    if (outcome === reference) this.matched++;
    else if (this.mismatches.length < MISMATCHES_SHOWN) {
      this.mismatches.push({ ...itemLink(item), reference, outcome });
    }
  }

  /** An item of the mode that is not complete (failed, cancelled, unfinished). */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    this.counts.addExcluded(item, reason);
  }

  result(): ReportReferenceAgreement | null {
    if (this.counts.withReference === 0) return null;
    const kappa = this.cohen.result();
    const cohen: ReportCohenKappa = {
      kappa: {
        value: kappa.value,
        n: kappa.items,
        interval: reportInterval(kappa.interval),
        note: kappa.reason ?? kappa.intervalReason,
      },
      reading: interpretKappa(kappa.value),
      observedAgreement: rate(this.matched, this.compared),
      expectedAgreement: kappa.expectedAgreement,
      categories: [...kappa.categories],
      confusion: kappa.confusion.map((row) => [...row]),
    };
    return {
      itemsWithReference: this.counts.withReference,
      itemsWithoutReference: this.counts.without,
      notCompared: this.counts.result(),
      comparedWith: this.comparedWith,
      matching: rate(this.matched, this.compared),
      cohen,
      numeric: null,
      mismatches: [...this.mismatches],
    };
  }
}

/**
 * The 95 % prediction interval for one more draw from the panel's final estimates:
 * mean ± t(0.975, n − 1) · s · √(1 + 1/n), s the sample standard deviation. Null below two
 * estimates (no spread to estimate).
 */
export function predictionInterval(
  values: readonly number[],
  confidence = 0.95,
): { low: number; high: number } | null {
  const n = values.length;
  if (n < 2) return null;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1));
  const half = twoSidedT(confidence, n - 1) * sd * Math.sqrt(1 + 1 / n);
  return { low: mean - half, high: mean + half };
}

/**
 * A numeric reference (Delphi): errors of the item's final value (the mean of the last round, the
 * value the mode reports as final) and whether the reference falls within the 95 % prediction
 * interval and within the range of the final estimates.
 */
export class NumericReferenceTracker {
  private readonly counts = new ReferenceCounts();
  private readonly absolute = new NumericSample();
  private readonly signed = new NumericSample();
  private readonly percentage = new NumericSample();
  private withPrediction = 0;
  private insidePrediction = 0;
  private withRange = 0;
  private insideRange = 0;
  private exact = 0;
  private readonly mismatches: ReportReferenceAgreement['mismatches'] = [];

  /**
   * A complete item; `given` is its reference as read (null when none or unreadable), `estimates`
   * the final round's numeric estimates.
   */
  add(item: ReportItem, given: number | null, panelValue: number | null, estimates: readonly number[]): void {
    const compared = this.counts.admit(item, given, panelValue);
    if (!compared) return;
    const { reference, outcome: finalValue } = compared;
    const error = finalValue - reference;
    this.absolute.add(Math.abs(error));
    this.signed.add(error);
    if (reference !== 0) this.percentage.add((100 * Math.abs(error)) / Math.abs(reference));
    if (error === 0) this.exact++;
    if (estimates.length > 0) {
      this.withRange++;
      if (reference >= Math.min(...estimates) && reference <= Math.max(...estimates)) this.insideRange++;
    }
    const interval = predictionInterval(estimates);
    if (interval !== null) {
      this.withPrediction++;
      if (reference >= interval.low && reference <= interval.high) this.insidePrediction++;
      else if (this.mismatches.length < MISMATCHES_SHOWN) {
        this.mismatches.push({
          ...itemLink(item),
          reference: String(reference),
          outcome: String(finalValue),
        });
      }
    }
  }

  /** An item of the mode that is not complete (failed, cancelled, unfinished). */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    this.counts.addExcluded(item, reason);
  }

  result(options: BootstrapOptions): ReportReferenceAgreement | null {
    if (this.counts.withReference === 0) return null;
    const numeric: ReportNumericReference = {
      meanAbsoluteError: bootstrapFigure(bootstrapMean(this.absolute.values(), options)),
      medianAbsoluteError: quantiles(this.absolute),
      meanSignedError: bootstrapFigure(bootstrapMean(this.signed.values(), options)),
      meanAbsolutePercentageError: bootstrapFigure(bootstrapMean(this.percentage.values(), options)),
      predictionIntervalCoverage: rate(this.insidePrediction, this.withPrediction),
      finalRangeCoverage: rate(this.insideRange, this.withRange),
    };
    return {
      itemsWithReference: this.counts.withReference,
      itemsWithoutReference: this.counts.without,
      notCompared: this.counts.result(),
      comparedWith:
        'the final value (the mean of the last round, as the mode reports it): exact match and errors; ' +
        'the 95 % prediction interval and the range of the final estimates (coverage)',
      matching: rate(this.exact, this.absolute.count),
      cohen: null,
      numeric,
      mismatches: [...this.mismatches],
    };
  }
}

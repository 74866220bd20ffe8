import type { ReportCohenKappa, ReportNumericReference, ReportReferenceAgreement } from '@conclave/contracts';
import { bootstrapMean, type BootstrapOptions } from '../bootstrap';
import { CohenKappaAccumulator } from '../cohen';
import { interpretKappa } from '../interpret';
import { NumericSample } from '../quantile';
import { bootstrapFigure, quantiles, rate, reportInterval } from './figures';
import { itemLink, type ReportItem } from './rows';

const MISMATCHES_SHOWN = 20;

/**
 * Agreement of the panel's outcome with the items' `reference` labels (a verdict, an expected
 * winner, an expected answer): share matching, Cohen's κ with its interval, the confusion matrix
 * (rows: reference, columns: panel).
 */
export class ReferenceTracker {
  private readonly cohen: CohenKappaAccumulator;
  private withReference = 0;
  private without = 0;
  private matched = 0;
  private compared = 0;
  private readonly mismatches: ReportReferenceAgreement['mismatches'] = [];

  constructor(
    private readonly comparedWith: string,
    categories: readonly string[] = [],
  ) {
    this.cohen = new CohenKappaAccumulator(categories, { a: 'the reference', b: comparedWith });
  }

  /** A complete item; `reference` null when it carries none. */
  add(item: ReportItem, reference: string | null, outcome: string | null): void {
    if (reference === null) {
      this.without++;
      return;
    }
    this.withReference++;
    if (outcome === null) return;
    this.compared++;
    this.cohen.add(reference, outcome);
    if (outcome === reference) this.matched++;
    else if (this.mismatches.length < MISMATCHES_SHOWN) {
      this.mismatches.push({ ...itemLink(item), reference, outcome });
    }
  }

  result(): ReportReferenceAgreement | null {
    if (this.withReference === 0) return null;
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
      itemsWithReference: this.withReference,
      itemsWithoutReference: this.without,
      comparedWith: this.comparedWith,
      matching: rate(this.matched, this.compared),
      cohen,
      numeric: null,
      mismatches: [...this.mismatches],
    };
  }
}

/** A numeric reference (Delphi): errors of the final median and coverage of the reported interval. */
export class NumericReferenceTracker {
  private withReference = 0;
  private without = 0;
  private readonly absolute = new NumericSample();
  private readonly signed = new NumericSample();
  private readonly percentage = new NumericSample();
  private covered = 0;
  private withInterval = 0;
  private within = 0;
  private readonly mismatches: ReportReferenceAgreement['mismatches'] = [];

  add(
    item: ReportItem,
    reference: number | null,
    median: number | null,
    interval: { low: number; high: number } | null,
  ): void {
    if (reference === null) {
      this.without++;
      return;
    }
    this.withReference++;
    if (median !== null) {
      const error = median - reference;
      this.absolute.add(Math.abs(error));
      this.signed.add(error);
      if (reference !== 0) this.percentage.add(Math.abs(error) / Math.abs(reference));
      if (error === 0) this.within++;
    }
    if (interval !== null) {
      this.withInterval++;
      if (reference >= interval.low && reference <= interval.high) this.covered++;
      else if (this.mismatches.length < MISMATCHES_SHOWN) {
        this.mismatches.push({
          ...itemLink(item),
          reference: String(reference),
          outcome: median === null ? null : String(median),
        });
      }
    }
  }

  result(options: BootstrapOptions): ReportReferenceAgreement | null {
    if (this.withReference === 0) return null;
    const numeric: ReportNumericReference = {
      meanAbsoluteError: bootstrapFigure(bootstrapMean(this.absolute.values(), options)),
      medianAbsoluteError: quantiles(this.absolute),
      meanSignedError: bootstrapFigure(bootstrapMean(this.signed.values(), options)),
      meanAbsolutePercentageError: bootstrapFigure(bootstrapMean(this.percentage.values(), options)),
      intervalCoverage: rate(this.covered, this.withInterval),
    };
    return {
      itemsWithReference: this.withReference,
      itemsWithoutReference: this.without,
      comparedWith: 'the final median (exact match), and the reported 95 % interval (coverage)',
      matching: rate(this.within, this.absolute.count),
      cohen: null,
      numeric,
      mismatches: [...this.mismatches],
    };
  }
}

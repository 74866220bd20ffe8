import { RunningStats, type RunningStatsResult } from './descriptive';
import { isPresent } from './result';

/** One rater's score on one dimension of one item. */
export interface DimensionRating {
  readonly rater: string;
  readonly dimension: string;
  readonly score: number | null | undefined;
}

export interface RaterLeniency {
  readonly rater: string;
  /** Items where this rater and at least one other scored the dimension. */
  readonly items: number;
  /** The rater's mean score on those items. */
  readonly raterMean: number;
  /** Mean, over the same items, of the panel's mean score on each item (the rater included). */
  readonly panelMean: number;
  /**
   * raterMean − panelMean: positive = more lenient than the panel, negative = stricter. Comparing on
   * the same items keeps a rater who happened to see easier items from looking lenient.
   */
  readonly leniency: number;
  /** Standard error of the leniency over items; null below two items. */
  readonly standardError: number | null;
}

export interface DimensionLeniency {
  readonly dimension: string;
  /** All scores on the dimension, whatever the number of raters per item. */
  readonly scores: RunningStatsResult;
  /** Items on which the dimension had fewer than two scores, so no one could deviate from a panel. */
  readonly itemsWithoutPanel: number;
  /** Most lenient first. */
  readonly raters: readonly RaterLeniency[];
}

interface RaterState {
  readonly own: RunningStats;
  readonly panel: RunningStats;
  readonly deviation: RunningStats;
}

/**
 * Per-rater leniency by dimension (jurors' scores), one item at a time. For each item and
 * dimension the panel mean is the mean of every rater's score there; a rater's leniency is the
 * mean of its score minus that panel mean, over the items it scored. Memory: three running sums per
 * rater and dimension.
 */
export class LeniencyAccumulator {
  private readonly dimensions = new Map<
    string,
    { scores: RunningStats; itemsWithoutPanel: number; raters: Map<string, RaterState> }
  >();

  addItem(ratings: Iterable<DimensionRating>): void {
    const byDimension = new Map<string, { rater: string; score: number }[]>();
    for (const { rater, dimension, score } of ratings) {
      const dim = this.dimension(dimension);
      dim.scores.add(score);
      if (!isPresent(score)) continue;
      const list = byDimension.get(dimension);
      if (list === undefined) byDimension.set(dimension, [{ rater, score }]);
      else list.push({ rater, score });
    }
    for (const [dimension, scores] of byDimension) {
      const dim = this.dimension(dimension);
      if (scores.length < 2) {
        dim.itemsWithoutPanel++;
        continue;
      }
      let sum = 0;
      for (const { score } of scores) sum += score;
      const panelMean = sum / scores.length;
      for (const { rater, score } of scores) {
        let state = dim.raters.get(rater);
        if (state === undefined) {
          state = { own: new RunningStats(), panel: new RunningStats(), deviation: new RunningStats() };
          dim.raters.set(rater, state);
        }
        state.own.add(score);
        state.panel.add(panelMean);
        state.deviation.add(score - panelMean);
      }
    }
  }

  private dimension(name: string): {
    scores: RunningStats;
    itemsWithoutPanel: number;
    raters: Map<string, RaterState>;
  } {
    let dim = this.dimensions.get(name);
    if (dim === undefined) {
      dim = { scores: new RunningStats(), itemsWithoutPanel: 0, raters: new Map() };
      this.dimensions.set(name, dim);
    }
    return dim;
  }

  /** Dimensions in order of first appearance. */
  result(): readonly DimensionLeniency[] {
    return [...this.dimensions].map(([dimension, dim]) => {
      const raters: RaterLeniency[] = [];
      for (const [rater, state] of dim.raters) {
        const own = state.own.result();
        const panel = state.panel.result();
        const deviation = state.deviation.result();
        if (own.mean === null || panel.mean === null || deviation.mean === null) continue;
        raters.push({
          rater,
          items: own.count,
          raterMean: own.mean,
          panelMean: panel.mean,
          leniency: deviation.mean,
          standardError: deviation.standardError,
        });
      }
      raters.sort((a, b) => b.leniency - a.leniency || (a.rater < b.rater ? -1 : a.rater > b.rater ? 1 : 0));
      return { dimension, scores: dim.scores.result(), itemsWithoutPanel: dim.itemsWithoutPanel, raters };
    });
  }
}

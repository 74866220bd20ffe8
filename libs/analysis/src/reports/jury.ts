import {
  DIMENSIONS,
  VERDICTS,
  type ReportDisagreementItem,
  type ReportJuror,
  type ReportJury,
  type ReportJuryDimension,
} from '@conclave/contracts';
import type { BootstrapOptions } from '../bootstrap';
import { CategoryCounts, RunningStats, TopK } from '../descriptive';
import { FleissKappaAccumulator } from '../fleiss';
import { interpretAlpha, interpretKappa } from '../interpret';
import { KrippendorffAlphaAccumulator } from '../krippendorff';
import { LeniencyAccumulator, type DimensionRating } from '../leniency';
import { NumericSample } from '../quantile';
import { bootstrapMeans } from './bootstrap-columns';
import { juryFacts, type JuryFacts } from './extract';
import { bootstrapFigure, distribution, rate, reportInterval, standardErrorFigure } from './figures';
import { bootstrapStatistics, FleissKappaItems, IntervalAlphaUnits } from '../inference/agreement-bootstrap';
import { ReferenceTracker, type ReferenceExclusion } from './reference';
import { itemLink, type ReportItem, type ReportStageRow } from './rows';

/** Why an agreement coefficient with a value has no item-bootstrap interval. */
const NO_AGREEMENT_INTERVAL =
  'the item bootstrap gives no interval: every resample gave the same value (or none was defined)';

const SCORE_VALUES = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'];
const OVERALL = 'overall';
const MOST_DISAGREEMENT = 10;

interface DimensionState {
  scores: RunningStats;
  values: CategoryCounts<string>;
  itemMeans: NumericSample;
  alpha: KrippendorffAlphaAccumulator;
  /** The same units kept per item, for α's item-bootstrap interval. */
  alphaUnits: IntervalAlphaUnits;
}

interface JurorState {
  verdicts: CategoryCounts<string>;
  assessments: number;
  unparsed: number;
  scoresUnread: number;
  verdictUnread: number;
}

/** A verdict as the reference column may spell it: trimmed, upper case. */
export const normaliseVerdict = (value: string | number | null): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.trim().toUpperCase() : null;

/**
 * Jury items: score distributions, verdicts, leniency, Krippendorff's α per dimension, Fleiss' κ
 * on verdicts, the items the jurors disagreed on most, agreement with a reference verdict.
 */
export class JuryReportBuilder {
  private readonly dimensions = new Map<string, DimensionState>();
  private readonly leniency = new LeniencyAccumulator();
  private readonly overallLeniency = new LeniencyAccumulator();
  private readonly jurors = new Map<string, JurorState>();
  private readonly verdicts = new CategoryCounts<string>([...VERDICTS]);
  private readonly jurorVerdicts = new CategoryCounts<string>([...VERDICTS]);
  private readonly fleiss = new FleissKappaAccumulator([...VERDICTS]);
  private readonly fleissItems = new FleissKappaItems([...VERDICTS]);
  private readonly disagreement = new TopK<ReportDisagreementItem>(MOST_DISAGREEMENT);
  private readonly reference = new ReferenceTracker(
    'the final verdict (the foreman’s, else the majority’s)',
    [...VERDICTS],
  );
  private items = 0;
  private readonly assessments = { n: 0, allScoresRead: 0, someScoresRead: 0, verdictRead: 0 };

  constructor() {
    for (const dimension of DIMENSIONS) this.dimension(dimension);
  }

  private dimension(name: string): DimensionState {
    let state = this.dimensions.get(name);
    if (state === undefined) {
      state = {
        scores: new RunningStats(),
        values: new CategoryCounts<string>(SCORE_VALUES),
        itemMeans: new NumericSample(),
        alpha: new KrippendorffAlphaAccumulator(),
        alphaUnits: new IntervalAlphaUnits(),
      };
      this.dimensions.set(name, state);
    }
    return state;
  }

  private juror(name: string): JurorState {
    let state = this.jurors.get(name);
    if (state === undefined) {
      state = {
        verdicts: new CategoryCounts<string>([...VERDICTS]),
        assessments: 0,
        unparsed: 0,
        scoresUnread: 0,
        verdictUnread: 0,
      };
      this.jurors.set(name, state);
    }
    return state;
  }

  /** An item that is not complete (failed, cancelled, unfinished): counted in the reference counts. */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    this.reference.addExcluded(item, reason);
  }

  addItem(item: ReportItem, rows: readonly ReportStageRow[]): JuryFacts {
    const facts = juryFacts(rows);
    this.items++;
    if (facts.finalVerdict !== null) this.verdicts.add(facts.finalVerdict);
    this.reference.add(item, normaliseVerdict(item.reference), facts.finalVerdict);

    const ratings: DimensionRating[] = [];
    const overall: DimensionRating[] = [];
    const tally = { APPROVE: 0, REVISE: 0, REJECT: 0 };
    for (const juror of facts.jurors) {
      const state = this.juror(juror.juror);
      state.assessments++;
      if (!juror.parsed) state.unparsed++;
      // Each part is used where it was read (see ReportJury.assessments): the readable scores
      // below enter the score figures whatever the verdict, the verdict the verdict figures.
      const allScores = DIMENSIONS.every((d) => juror.scores.has(d));
      if (!allScores) state.scoresUnread++;
      if (juror.verdict === null) state.verdictUnread++;
      this.assessments.n++;
      if (allScores) this.assessments.allScoresRead++;
      if (juror.scores.size > 0) this.assessments.someScoresRead++;
      if (juror.verdict !== null) this.assessments.verdictRead++;
      if (juror.verdict !== null) {
        state.verdicts.add(juror.verdict);
        this.jurorVerdicts.add(juror.verdict);
        if (juror.verdict in tally) tally[juror.verdict as keyof typeof tally]++;
      }
      let sum = 0;
      for (const [dimension, score] of juror.scores) {
        ratings.push({ rater: juror.juror, dimension, score });
        sum += score;
      }
      if (juror.scores.size > 0)
        overall.push({ rater: juror.juror, dimension: OVERALL, score: sum / juror.scores.size });
    }
    this.leniency.addItem(ratings);
    this.overallLeniency.addItem(overall);
    this.fleiss.addRatings(facts.jurors.map((j) => j.verdict));
    this.fleissItems.addRatings(facts.jurors.map((j) => j.verdict));

    let spreadSum = 0;
    let spreadDimensions = 0;
    for (const [name, state] of this.dimensions) {
      const scores = facts.jurors.map((j) => j.scores.get(name)).filter((s): s is number => s !== undefined);
      for (const score of scores) {
        state.scores.add(score);
        state.values.add(String(score));
      }
      state.alpha.addUnit(scores);
      state.alphaUnits.addUnit(scores);
      if (scores.length > 0) state.itemMeans.add(scores.reduce((a, b) => a + b, 0) / scores.length);
      if (scores.length >= 2) {
        spreadSum += Math.max(...scores) - Math.min(...scores);
        spreadDimensions++;
      }
    }
    const withVerdict = tally.APPROVE + tally.REVISE + tally.REJECT;
    const verdictSplit =
      withVerdict === 0 ? 0 : 1 - Math.max(tally.APPROVE, tally.REVISE, tally.REJECT) / withVerdict;
    const scoreSpread = spreadDimensions === 0 ? 0 : spreadSum / spreadDimensions;
    if (verdictSplit > 0 || scoreSpread > 0) {
      // Verdict disagreement first, score spread (at most 9) to order items that split alike.
      this.disagreement.add(verdictSplit * 100 + scoreSpread, {
        ...itemLink(item),
        verdictSplit,
        scoreSpread,
        verdicts: tally,
        finalVerdict: facts.finalVerdict,
      });
    }
    return facts;
  }

  result(options: BootstrapOptions): ReportJury {
    const leniency = new Map(this.leniency.result().map((d) => [d.dimension, d]));
    const overall = this.overallLeniency.result().find((d) => d.dimension === OVERALL);
    // One set of resampled indices serves every dimension with the same items.
    const itemMeans = bootstrapMeans(
      [...this.dimensions.values()].map((state) => state.itemMeans.values()),
      options,
    );
    // κ's and every dimension's α interval from one draw of resampled items (each item with all
    // its verdicts and scores), only for the coefficients that are defined.
    const fleiss = this.fleiss.result();
    const defined = [...this.dimensions].filter(([, state]) => state.alpha.result('interval').value !== null);
    const [fleissInterval, ...alphaIntervals] = bootstrapStatistics(
      this.items,
      [
        (indices) => (fleiss.value === null ? null : this.fleissItems.kappa(indices)),
        ...defined.map(
          ([, state]) =>
            (indices: Uint32Array) =>
              state.alphaUnits.alpha(indices),
        ),
      ],
      { ...options, seed: `${String(options.seed ?? '')}:agreement` },
    );
    const agreementIntervals = new Map(defined.map(([name], i) => [name, alphaIntervals[i]]));
    const dimensions = [...this.dimensions].map(([name, state], d): ReportJuryDimension => {
      const scores = state.scores.result();
      const alpha = state.alpha.result('interval');
      const alphaInterval = agreementIntervals.get(name) ?? null;
      return {
        dimension: name,
        scores: {
          n: scores.count,
          mean: scores.mean,
          standardDeviation: scores.standardDeviation,
          min: scores.min,
          max: scores.max,
        },
        itemMean: bootstrapFigure(itemMeans[d]),
        distribution: distribution(state.values.result()),
        alpha: {
          value: alpha.value,
          n: alpha.pairableUnits,
          pairableValues: alpha.pairableValues,
          reading: interpretAlpha(alpha.value),
          interval: reportInterval(alphaInterval),
          note: alpha.reason ?? (alphaInterval === null ? NO_AGREEMENT_INTERVAL : null),
        },
      };
    });
    const jurors = [...this.jurors]
      .map(([juror, state]): ReportJuror => {
        const own = overall?.raters.find((r) => r.rater === juror);
        return {
          juror,
          items: own?.items ?? 0,
          leniency: standardErrorFigure(own?.leniency ?? null, own?.standardError ?? null, own?.items ?? 0),
          dimensions: [...leniency.values()].flatMap((d) => {
            const r = d.raters.find((x) => x.rater === juror);
            return r
              ? [
                  {
                    dimension: d.dimension,
                    leniency: standardErrorFigure(r.leniency, r.standardError, r.items),
                    raterMean: r.raterMean,
                    panelMean: r.panelMean,
                  },
                ]
              : [];
          }),
          verdicts: distribution(state.verdicts.result()),
          parseFailures: rate(state.unparsed, state.assessments),
          scoresUnread: rate(state.scoresUnread, state.assessments),
          verdictUnread: rate(state.verdictUnread, state.assessments),
        };
      })
      .sort(
        (a, b) =>
          (b.leniency.value ?? -Infinity) - (a.leniency.value ?? -Infinity) ||
          (a.juror < b.juror ? -1 : a.juror > b.juror ? 1 : 0),
      );

    return {
      items: this.items,
      assessments: { ...this.assessments },
      verdicts: distribution(this.verdicts.result()),
      jurorVerdicts: distribution(this.jurorVerdicts.result()),
      dimensions,
      jurors,
      fleissKappa: {
        value: fleiss.value,
        n: fleiss.ratedItems,
        ratersPerItem: fleiss.ratersPerItem ? { ...fleiss.ratersPerItem } : null,
        observedAgreement: fleiss.observedAgreement,
        expectedAgreement: fleiss.expectedAgreement,
        reading: interpretKappa(fleiss.value),
        interval: fleiss.value === null ? null : reportInterval(fleissInterval),
        note: fleiss.reason ?? (fleissInterval === null ? NO_AGREEMENT_INTERVAL : null),
      },
      mostDisagreement: this.disagreement.result().map((r) => r.item),
      reference: this.reference.result(),
    };
  }
}

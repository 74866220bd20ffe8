import type { ReportDelphi, ReportDelphiMovement, ReportReferenceAgreement } from '@conclave/contracts';
import { bootstrapMean, type BootstrapOptions } from '../bootstrap';
import { CategoryCounts, RunningStats } from '../descriptive';
import { NumericSample } from '../quantile';
import { delphiFacts, type DelphiFacts } from './extract';
import { bootstrapFigure, distribution, pooledRate, quantiles, rate } from './figures';
import {
  mergeExclusions,
  NumericReferenceTracker,
  ReferenceCounts,
  ReferenceTracker,
  type ReferenceExclusion,
} from './reference';
import type { ReportItem, ReportStageRow } from './rows';

const CV_BUCKETS = ['< 0.05', '0.05–0.10', '0.10–0.20', '0.20–0.50', '≥ 0.50'];
const AGREEMENT_BUCKETS = ['< 50 %', '50–74 %', '75–99 %', '100 %'];

function cvBucket(cv: number): string {
  if (cv < 0.05) return CV_BUCKETS[0];
  if (cv < 0.1) return CV_BUCKETS[1];
  if (cv < 0.2) return CV_BUCKETS[2];
  if (cv < 0.5) return CV_BUCKETS[3];
  return CV_BUCKETS[4];
}

function agreementBucket(share: number): string {
  if (share < 0.5) return AGREEMENT_BUCKETS[0];
  if (share < 0.75) return AGREEMENT_BUCKETS[1];
  if (share < 1) return AGREEMENT_BUCKETS[2];
  return AGREEMENT_BUCKETS[3];
}

/** A numeric reference: a number, or text that is one (a CSV cell). */
export function numericReference(value: string | number | null): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const n = Number(value.trim());
  return Number.isFinite(n) ? n : null;
}

interface MovementState {
  n: number;
  toward: number;
  away: number;
  closed: NumericSample;
  /** Per item reaching this round: its panelists' answers, and how many moved toward / away. */
  perItem: { n: number; toward: number; away: number }[];
}

/**
 * Delphi items: convergence, rounds, final spread or agreement, movement toward the median, and
 * agreement with a reference (error of the final value the mode reports, coverage of the 95 %
 * prediction interval and of the range of the final estimates).
 */
export class DelphiReportBuilder {
  private items = 0;
  private numeric = 0;
  private qualitative = 0;
  private converged = 0;
  private readonly convergenceRounds = new CategoryCounts<string>();
  private readonly convergenceRoundStats = new RunningStats();
  private readonly rounds = new CategoryCounts<string>();
  private readonly finalCv = new NumericSample();
  private readonly finalCvBuckets = new CategoryCounts<string>(CV_BUCKETS);
  private readonly finalAgreement = new NumericSample();
  private readonly finalAgreementBuckets = new CategoryCounts<string>(AGREEMENT_BUCKETS);
  private readonly movement = new Map<number, MovementState>();
  private readonly numericReference = new NumericReferenceTracker();
  private readonly answerReference = new ReferenceTracker('the final answer (the most common one)');
  /** Items that are not complete: their question type is unknown, so neither tracker above holds them. */
  private readonly excludedReference = new ReferenceCounts();

  addItem(item: ReportItem, rows: readonly ReportStageRow[]): DelphiFacts {
    const facts = delphiFacts(rows);
    this.items++;
    const last = facts.rounds.at(-1);
    if (facts.type === 'numeric') this.numeric++;
    else if (facts.type === 'qualitative') this.qualitative++;
    if (facts.converged) {
      this.converged++;
      if (facts.convergenceRound !== null) {
        this.convergenceRounds.add(String(facts.convergenceRound));
        this.convergenceRoundStats.add(facts.convergenceRound);
      }
    }
    if (last) this.rounds.add(String(last.round));
    if (facts.type === 'numeric') {
      if (last?.cv !== null && last?.cv !== undefined) {
        this.finalCv.add(last.cv);
        this.finalCvBuckets.add(cvBucket(last.cv));
      }
      this.addMovement(facts);
      this.numericReference.add(
        item,
        numericReference(item.reference),
        facts.finalValue,
        facts.finalEstimates,
      );
    } else if (facts.type === 'qualitative') {
      if (last?.agreement !== null && last?.agreement !== undefined) {
        this.finalAgreement.add(last.agreement);
        this.finalAgreementBuckets.add(agreementBucket(last.agreement));
      }
      const reference =
        item.reference === null
          ? null
          : String(item.reference).trim() === ''
            ? null
            : String(item.reference).trim();
      this.answerReference.add(item, reference, facts.finalAnswer);
    }
    return facts;
  }

  /** An item that is not complete (failed, cancelled, unfinished): counted in the reference counts. */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    this.excludedReference.addExcluded(item, reason);
  }

  private addMovement(facts: DelphiFacts): void {
    for (let i = 1; i < facts.rounds.length; i++) {
      const median = facts.rounds[i - 1].median;
      if (median === null) continue;
      const round = facts.rounds[i];
      let state = this.movement.get(round.round);
      if (state === undefined) {
        state = { n: 0, toward: 0, away: 0, closed: new NumericSample(), perItem: [] };
        this.movement.set(round.round, state);
      }
      const own = { n: 0, toward: 0, away: 0 };
      for (const answer of round.answers) {
        if (answer.carriedForward || typeof answer.value !== 'number' || typeof answer.previous !== 'number')
          continue;
        const before = Math.abs(answer.previous - median);
        const after = Math.abs(answer.value - median);
        state.n++;
        own.n++;
        if (after < before) {
          state.toward++;
          own.toward++;
        } else if (after > before) {
          state.away++;
          own.away++;
        }
        if (before > 0) state.closed.add((before - after) / before);
      }
      if (own.n > 0) state.perItem.push(own);
    }
  }

  result(options: BootstrapOptions): ReportDelphi {
    const movement = [...this.movement]
      .sort(([a], [b]) => a - b)
      .map(([round, s]): ReportDelphiMovement => ({
        round,
        n: s.n,
        // The panelists of one item read the same median and feedback: clustered by item.
        movedTowardMedian: pooledRate(
          s.perItem.map((own) => ({ successes: own.toward, trials: own.n })),
          { ...options, seed: `${String(options.seed ?? '')}:share:toward:${round}` },
        ),
        movedAway: pooledRate(
          s.perItem.map((own) => ({ successes: own.away, trials: own.n })),
          { ...options, seed: `${String(options.seed ?? '')}:share:away:${round}` },
        ),
        distanceClosed: bootstrapFigure(bootstrapMean(s.closed.values(), options)),
      }));
    const convergence = this.convergenceRoundStats.result();
    const cvMean = mean(this.finalCv.values());
    const agreementMean = mean(this.finalAgreement.values());
    const numeric = this.numericReference.result(options);
    const answers = this.answerReference.result();
    return {
      items: this.items,
      numericItems: this.numeric,
      qualitativeItems: this.qualitative,
      converged: rate(this.converged, this.items),
      roundsToConvergence: {
        n: convergence.count,
        mean: convergence.mean,
        distribution: distribution(this.convergenceRounds.result()),
      },
      rounds: distribution(this.rounds.result()),
      finalCv: {
        ...quantiles(this.finalCv),
        mean: cvMean,
        distribution: distribution(this.finalCvBuckets.result()),
      },
      finalAgreement: {
        ...quantiles(this.finalAgreement),
        mean: agreementMean,
        distribution: distribution(this.finalAgreementBuckets.result()),
      },
      movement,
      reference: mergeReferences(numeric, answers, this.excludedReference),
    };
  }
}

function mean(values: Float64Array): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/**
 * A batch mixing numeric and qualitative Delphi questions reports the numeric agreement first; the
 * counts are over all the mode's items, those not complete included.
 */
function mergeReferences(
  numeric: ReportReferenceAgreement | null,
  answers: ReportReferenceAgreement | null,
  excluded: ReferenceCounts,
): ReportReferenceAgreement | null {
  const parts = [numeric, answers].filter((r): r is ReportReferenceAgreement => r !== null);
  const withReference = parts.reduce((n, r) => n + r.itemsWithReference, excluded.withReference);
  if (withReference === 0) return null;
  const first: ReportReferenceAgreement = parts[0] ?? {
    itemsWithReference: 0,
    itemsWithoutReference: 0,
    notCompared: new ReferenceCounts().result(),
    comparedWith: 'the final value (numeric questions) or the final answer (qualitative questions)',
    matching: rate(0, 0),
    cohen: null,
    numeric: null,
    mismatches: [],
  };
  const notCompared = parts
    .map((r) => r.notCompared)
    .reduce((a, b) => mergeExclusions(a, b), excluded.result());
  const without = parts.reduce((n, r) => n + r.itemsWithoutReference, excluded.without);
  if (numeric === null || answers === null)
    return { ...first, itemsWithReference: withReference, itemsWithoutReference: without, notCompared };
  return {
    ...numeric,
    itemsWithReference: withReference,
    itemsWithoutReference: without,
    notCompared,
    comparedWith: `numeric questions: ${numeric.comparedWith}; qualitative questions (κ): ${answers.comparedWith}`,
    cohen: answers.cohen,
    mismatches: [...numeric.mismatches, ...answers.mismatches],
  };
}

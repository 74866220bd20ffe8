import type { ReportDelphi, ReportDelphiMovement, ReportReferenceAgreement } from '@conclave/contracts';
import { bootstrapMean, type BootstrapOptions } from '../bootstrap';
import { CategoryCounts, RunningStats } from '../descriptive';
import { NumericSample } from '../quantile';
import { delphiFacts, type DelphiFacts } from './extract';
import { bootstrapFigure, distribution, quantiles, rate } from './figures';
import { NumericReferenceTracker, ReferenceTracker } from './reference';
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
}

/**
 * Delphi items: convergence, rounds, final spread or agreement, movement toward the median, and
 * agreement with a reference (error of the final median, coverage of the reported interval).
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
        facts.finalMedian,
        facts.finalInterval,
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

  private addMovement(facts: DelphiFacts): void {
    for (let i = 1; i < facts.rounds.length; i++) {
      const median = facts.rounds[i - 1].median;
      if (median === null) continue;
      const round = facts.rounds[i];
      let state = this.movement.get(round.round);
      if (state === undefined) {
        state = { n: 0, toward: 0, away: 0, closed: new NumericSample() };
        this.movement.set(round.round, state);
      }
      for (const answer of round.answers) {
        if (answer.carriedForward || typeof answer.value !== 'number' || typeof answer.previous !== 'number')
          continue;
        const before = Math.abs(answer.previous - median);
        const after = Math.abs(answer.value - median);
        state.n++;
        if (after < before) state.toward++;
        else if (after > before) state.away++;
        if (before > 0) state.closed.add((before - after) / before);
      }
    }
  }

  result(options: BootstrapOptions): ReportDelphi {
    const movement = [...this.movement]
      .sort(([a], [b]) => a - b)
      .map(([round, s]): ReportDelphiMovement => ({
        round,
        n: s.n,
        movedTowardMedian: rate(s.toward, s.n),
        movedAway: rate(s.away, s.n),
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
      reference: mergeReferences(numeric, answers),
    };
  }
}

function mean(values: Float64Array): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** A batch mixing numeric and qualitative Delphi questions reports the numeric agreement first. */
function mergeReferences(
  numeric: ReportReferenceAgreement | null,
  answers: ReportReferenceAgreement | null,
): ReportReferenceAgreement | null {
  if (numeric === null) return answers;
  if (answers === null) return numeric;
  return {
    ...numeric,
    itemsWithReference: numeric.itemsWithReference + answers.itemsWithReference,
    itemsWithoutReference: numeric.itemsWithoutReference + answers.itemsWithoutReference,
    comparedWith: `numeric questions: ${numeric.comparedWith}; qualitative questions (κ): ${answers.comparedWith}`,
    cohen: answers.cohen,
    mismatches: [...numeric.mismatches, ...answers.mismatches],
  };
}

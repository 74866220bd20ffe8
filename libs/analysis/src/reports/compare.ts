import {
  DIMENSIONS,
  VERDICTS,
  type BatchComparison,
  type ComparedBatch,
  type ComparisonDifference,
  type ComparisonFlip,
  type ModeName,
  type ReportModelUsage,
} from '@conclave/contracts';
import { DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_CONFIDENCE, type BootstrapOptions } from '../bootstrap';
import { bootstrapMeans } from './bootstrap-columns';
import { modelUsage, usageSummary } from './batch-report';
import { contestFacts, councilFacts, delphiFacts, juryFacts } from './extract';
import { bootstrapFigure, rate } from './figures';
import { itemLink, type ReportAggregates, type ReportItem, type ReportStageRow } from './rows';

const FLIPS_SHOWN = 50;
const SEPARATOR = '\u0000';

const OUTCOME: Record<ModeName, string> = {
  council: 'the best-ranked model',
  vote: 'the winner model',
  debate: 'the winner model',
  jury: 'the final verdict',
  delphi: 'the final answer (qualitative questions); numeric questions are compared by their final median',
};

/**
 * One batch's side of a comparison: per matched slot (a key or an item index) the item, its
 * outcome and a few numbers per measure, in compact columns (8 bytes per slot and measure).
 */
export class ComparisonSide {
  private readonly items: (ReportItem | undefined)[];
  private readonly outcomes: (string | null)[];
  private readonly columns = new Map<string, Float64Array>();

  constructor(
    readonly mode: ModeName,
    readonly slots: number,
  ) {
    this.items = new Array<ReportItem | undefined>(slots);
    this.outcomes = new Array<string | null>(slots).fill(null);
  }

  private set(measure: string, subject: string, slot: number, value: number): void {
    const key = `${measure}${SEPARATOR}${subject}`;
    let column = this.columns.get(key);
    if (column === undefined) {
      column = new Float64Array(this.slots).fill(NaN);
      this.columns.set(key, column);
    }
    column[slot] = value;
  }

  item(slot: number): ReportItem | undefined {
    return this.items[slot];
  }

  outcome(slot: number): string | null {
    return this.outcomes[slot];
  }

  complete(slot: number): boolean {
    return this.items[slot]?.status === 'complete';
  }

  measures(): string[] {
    return [...this.columns.keys()];
  }

  column(key: string): Float64Array | undefined {
    return this.columns.get(key);
  }

  /** Records an item at its slot; only a complete item contributes numbers and an outcome. */
  add(slot: number, item: ReportItem, rows: readonly ReportStageRow[]): void {
    this.items[slot] = item;
    if (item.status !== 'complete') return;
    switch (item.mode) {
      case 'council': {
        const facts = councilFacts(rows);
        this.outcomes[slot] = facts.winner;
        const best = Math.min(...facts.meanRanks.values());
        const leaders = [...facts.meanRanks].filter(([, r]) => r - best < 1e-9).length;
        for (const [model, rank] of facts.meanRanks) {
          this.set('average rank', model, slot, rank);
          this.set('first-place share', model, slot, rank - best < 1e-9 ? 1 / leaders : 0);
        }
        break;
      }
      case 'vote':
      case 'debate': {
        const facts = contestFacts(item.mode, rows);
        this.outcomes[slot] = facts.winner;
        for (const model of facts.contestants)
          this.set('win rate', model, slot, facts.winner === model ? 1 : 0);
        break;
      }
      case 'jury': {
        const facts = juryFacts(rows);
        this.outcomes[slot] = facts.finalVerdict;
        if (facts.finalVerdict !== null) {
          for (const verdict of VERDICTS)
            this.set('verdict share', verdict, slot, facts.finalVerdict === verdict ? 1 : 0);
        }
        let overallSum = 0;
        let overallCount = 0;
        for (const dimension of DIMENSIONS) {
          const scores = facts.jurors
            .map((j) => j.scores.get(dimension))
            .filter((s): s is number => s !== undefined);
          if (scores.length === 0) continue;
          const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
          this.set('mean score', dimension, slot, mean);
          overallSum += mean;
          overallCount++;
        }
        if (overallCount > 0) this.set('mean score', 'all dimensions', slot, overallSum / overallCount);
        break;
      }
      case 'delphi': {
        const facts = delphiFacts(rows);
        this.set('converged', '', slot, facts.converged ? 1 : 0);
        const last = facts.rounds.at(-1);
        if (last) this.set('rounds', '', slot, last.round);
        if (facts.type === 'numeric') {
          if (facts.finalMedian !== null) this.set('final median', '', slot, facts.finalMedian);
          if (last?.cv !== null && last?.cv !== undefined) this.set('final CV', '', slot, last.cv);
        } else if (facts.type === 'qualitative') {
          this.outcomes[slot] = facts.finalAnswer;
          if (last?.agreement !== null && last?.agreement !== undefined) {
            this.set('final agreement', '', slot, last.agreement);
          }
        }
        break;
      }
    }
  }
}

export interface ComparisonMeta {
  a: ComparedBatch;
  b: ComparedBatch;
  matchedBy: 'key' | 'index';
  unmatched: BatchComparison['unmatched'];
}

/**
 * B against A over matched slots where both items are complete: each measure's mean in A and in
 * B, and B − A with a paired bootstrap interval (resampling pairs keeps each item's difficulty on
 * both sides, so the interval is much narrower than two independent ones); outcome flips.
 */
export function compareSides(
  a: ComparisonSide,
  b: ComparisonSide,
  meta: ComparisonMeta,
  aggregates: { a: ReportAggregates; b: ReportAggregates },
  options: { seed: string; resamples?: number },
): BatchComparison {
  if (a.slots !== b.slots) throw new RangeError('both sides of a comparison need the same slots');
  const bootstrap: BootstrapOptions = {
    seed: options.seed,
    resamples: options.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: DEFAULT_CONFIDENCE,
  };
  const both: number[] = [];
  let pairs = 0;
  for (let slot = 0; slot < a.slots; slot++) {
    if (a.item(slot) === undefined || b.item(slot) === undefined) continue;
    pairs++;
    if (a.complete(slot) && b.complete(slot)) both.push(slot);
  }
  const keys = [...new Set([...a.measures(), ...b.measures()])].sort();
  // Per measure, the B − A difference of each complete pair with a value on both sides. The mean
  // of these with a bootstrap over pairs is pairedBootstrap(b, a); computed for all measures at
  // once, so measures over the same pairs share their resampled indices.
  const measured = keys.map((key) => {
    const columnA = a.column(key);
    const columnB = b.column(key);
    let sumA = 0;
    let sumB = 0;
    const differences: number[] = [];
    for (const slot of both) {
      const x = columnA?.[slot] ?? NaN;
      const y = columnB?.[slot] ?? NaN;
      if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
      sumA += x;
      sumB += y;
      differences.push(y - x);
    }
    const n = differences.length;
    return { key, a: n === 0 ? null : sumA / n, b: n === 0 ? null : sumB / n, differences };
  });
  const estimates = bootstrapMeans(
    measured.map((m) => m.differences),
    bootstrap,
  );
  const differences = measured.map((m, i): ComparisonDifference => {
    const [measure, subject] = m.key.split(SEPARATOR);
    return {
      measure,
      subject: subject === '' ? null : subject,
      a: m.a,
      b: m.b,
      difference: bootstrapFigure(estimates[i]),
    };
  });
  let compared = 0;
  let flippedCount = 0;
  const flips: ComparisonFlip[] = [];
  for (const slot of both) {
    const outcomeA = a.outcome(slot);
    const outcomeB = b.outcome(slot);
    if (outcomeA === null || outcomeB === null) continue;
    compared++;
    if (outcomeA === outcomeB) continue;
    flippedCount++;
    const itemA = a.item(slot);
    const itemB = b.item(slot);
    if (flips.length < FLIPS_SHOWN && itemA && itemB) {
      flips.push({ a: itemLink(itemA), b: itemLink(itemB), outcomeA, outcomeB });
    }
  }
  const usageA = modelUsage(aggregates.a, new Map());
  const usageB = modelUsage(aggregates.b, new Map());
  const models = [...new Set([...usageA.map((m) => m.model), ...usageB.map((m) => m.model)])]
    .sort()
    .map((model) => ({
      model,
      a: usageA.find((m) => m.model === model) ?? null,
      b: usageB.find((m) => m.model === model) ?? null,
    }));
  const notes: string[] = [];
  if (meta.a.partial || meta.b.partial) {
    notes.push('At least one batch is still running: only pairs where both items are complete are compared.');
  }
  if (a.mode === 'delphi') {
    notes.push(
      'Numeric Delphi questions have no categorical outcome: they are compared by final median, CV and convergence, not flips.',
    );
  }
  notes.push(
    'Differences are B − A over pairs where both items are complete; a model absent from one side of a pair drops that pair from its figures.',
  );
  return {
    a: meta.a,
    b: meta.b,
    mode: a.mode,
    matchedBy: meta.matchedBy,
    pairs,
    completePairs: both.length,
    unmatched: meta.unmatched,
    outcome: OUTCOME[a.mode],
    differences,
    flipped: rate(flippedCount, compared),
    flips,
    usage: { a: usageSummary(aggregates.a.usage), b: usageSummary(aggregates.b.usage) },
    models: models as { model: string; a: ReportModelUsage | null; b: ReportModelUsage | null }[],
    method: {
      confidence: DEFAULT_CONFIDENCE,
      resamples: bootstrap.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES,
      seed: options.seed,
    },
    notes,
  };
}

import {
  DIMENSIONS,
  VERDICTS,
  type BatchComparison,
  type ComparedBatch,
  type ComparisonDifference,
  type ComparisonFlip,
  type ComparisonFlipTest,
  type ComparisonSeat,
  type ModeName,
  type ReportModelUsage,
} from '@conclave/contracts';
import { DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_CONFIDENCE, type BootstrapOptions } from '../bootstrap';
import { bootstrapMeans } from './bootstrap-columns';
import { modelUsage, usageSummary } from './batch-report';
import { exactMcNemar, holmAdjust } from '../inference/exact';
import { contestFacts, councilFacts, delphiFacts, juryFacts, labelPosition } from './extract';
import { bootstrapFigure, rate } from './figures';
import { comparisonMethods, multipleComparisonNote } from './methods';
import { itemLink, type ReportAggregates, type ReportItem, type ReportStageRow } from './rows';

const FLIPS_SHOWN = 50;
const SEPARATOR = '\u0000';
/** The subject of a per-model measure: the seat, so a model renamed between batches keeps its row. */
const SEAT_MARK = '\u0001';
const seatSubject = (seat: number) => `${SEAT_MARK}${seat}`;
/** The seat a subject names (`seatSubject`), else null: a verdict, a dimension, an answer. */
const seatOf = (subject: string): number | null =>
  subject.startsWith(SEAT_MARK) ? Number(subject.slice(SEAT_MARK.length)) : null;

const WINNER_STAGE = { vote: 'vote_winner', debate: 'debate_winner' } as const;

/**
 * Vote and debate: seat (1-based roster position) per answering model, from the `initial_answer`
 * rows (participant is the 0-based roster position; rows without one count in roster order), and
 * the winner's seat from the winner row's participant, else the first seat of the winner model.
 */
function contestSeats(
  mode: 'vote' | 'debate',
  rows: readonly ReportStageRow[],
  winner: string | null,
): { seats: { seat: number; model: string }[]; winnerSeat: number | null } {
  const seats = rows
    .filter((r) => r.stageType === 'initial_answer')
    .map((r, i) => ({ seat: (r.participant ?? i) + 1, model: r.model ?? '' }))
    .sort((x, y) => x.seat - y.seat);
  const winnerRow = rows.find((r) => r.stageType === WINNER_STAGE[mode]);
  const winnerSeat =
    winnerRow?.participant !== null && winnerRow?.participant !== undefined
      ? winnerRow.participant + 1
      : (seats.find((s) => s.model === winner)?.seat ?? null);
  return { seats, winnerSeat };
}

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
  /** What is compared for a flip: the winner's seat (`seatSubject`), a verdict, an answer. */
  private readonly outcomes: (string | null)[];
  /** What a reader sees of the outcome: the winner model, the verdict, the answer. */
  private readonly labels: (string | null)[];
  private readonly columns = new Map<string, Float64Array>();
  /** Council, vote, debate: the models seen at each seat on complete items. */
  private readonly seatModels = new Map<number, Set<string>>();

  constructor(
    readonly mode: ModeName,
    readonly slots: number,
  ) {
    this.items = new Array<ReportItem | undefined>(slots);
    this.outcomes = new Array<string | null>(slots).fill(null);
    this.labels = new Array<string | null>(slots).fill(null);
  }

  private seat(seat: number, model: string): void {
    let models = this.seatModels.get(seat);
    if (models === undefined) {
      models = new Set();
      this.seatModels.set(seat, models);
    }
    models.add(model);
  }

  /** The models seen at a seat on this side, sorted. */
  modelsAt(seat: number): string[] {
    return [...(this.seatModels.get(seat) ?? [])].sort();
  }

  seats(): number[] {
    return [...this.seatModels.keys()];
  }

  /** The outcome as a reader sees it (the winner model rather than its seat). */
  outcomeLabel(slot: number): string | null {
    return this.labels[slot];
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
        // Council labels the answers in roster order (Response A = seat 1) and its members are
        // distinct models, so a model's seat is its label's position.
        const facts = councilFacts(rows);
        const seatOf = new Map<string, number>();
        for (const [label, model] of Object.entries(facts.labelToModel)) {
          const seat = labelPosition(label);
          if (seat === null || seatOf.has(model)) continue;
          seatOf.set(model, seat);
          this.seat(seat, model);
        }
        const winnerSeat = facts.winner === null ? undefined : seatOf.get(facts.winner);
        this.outcomes[slot] = winnerSeat === undefined ? facts.winner : seatSubject(winnerSeat);
        this.labels[slot] = facts.winner;
        const best = Math.min(...facts.meanRanks.values());
        const leaders = [...facts.meanRanks].filter(([, r]) => r - best < 1e-9).length;
        for (const [model, rank] of facts.meanRanks) {
          const seat = seatOf.get(model);
          const subject = seat === undefined ? model : seatSubject(seat);
          this.set('average rank', subject, slot, rank);
          this.set('first-place share', subject, slot, rank - best < 1e-9 ? 1 / leaders : 0);
        }
        break;
      }
      case 'vote':
      case 'debate': {
        const facts = contestFacts(item.mode, rows);
        const { seats, winnerSeat } = contestSeats(item.mode, rows, facts.winner);
        this.outcomes[slot] = winnerSeat === null ? facts.winner : seatSubject(winnerSeat);
        this.labels[slot] = facts.winner;
        for (const { seat, model } of seats) {
          this.seat(seat, model);
          this.set('win rate', seatSubject(seat), slot, winnerSeat === seat ? 1 : 0);
        }
        break;
      }
      case 'jury': {
        const facts = juryFacts(rows);
        this.outcomes[slot] = facts.finalVerdict;
        this.labels[slot] = facts.finalVerdict;
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
          this.labels[slot] = facts.finalAnswer;
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
  // Seats: the models each side had at each roster position, and the reader's name for the seat.
  const seats: ComparisonSeat[] = [...new Set([...a.seats(), ...b.seats()])]
    .sort((x, y) => x - y)
    .map((seat) => {
      const modelsA = a.modelsAt(seat);
      const modelsB = b.modelsAt(seat);
      const changed = modelsA.join('\n') !== modelsB.join('\n');
      return { seat, a: modelsA, b: modelsB, changed };
    });
  const seatName = (seat: number): string => {
    const s = seats.find((x) => x.seat === seat);
    const list = (models: string[] | undefined) => (models?.length ? models.join(', ') : 'no model');
    if (!s || !s.changed) return `seat ${seat}: ${list(s?.a.length ? s.a : s?.b)}`;
    return `seat ${seat}: ${list(s.a)} → ${list(s.b)}`;
  };
  const seatOfSubject = seatOf;
  const keys = [...new Set([...a.measures(), ...b.measures()])].sort((x, y) => {
    const [measureX, subjectX] = x.split(SEPARATOR);
    const [measureY, subjectY] = y.split(SEPARATOR);
    if (measureX !== measureY) return measureX < measureY ? -1 : 1;
    const seatX = seatOfSubject(subjectX);
    const seatY = seatOfSubject(subjectY);
    if (seatX !== null && seatY !== null) return seatX - seatY;
    return subjectX < subjectY ? -1 : subjectX > subjectY ? 1 : 0;
  });
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
    const seat = seatOfSubject(subject);
    return {
      measure,
      subject: seat !== null ? seatName(seat) : subject === '' ? null : subject,
      seat,
      a: m.a,
      b: m.b,
      difference: bootstrapFigure(estimates[i]),
    };
  });
  let compared = 0;
  let flippedCount = 0;
  const flips: ComparisonFlip[] = [];
  // Per outcome: pairs that had it in A only and in B only (McNemar's discordant pairs).
  const discordant = new Map<string, { onlyA: number; onlyB: number }>();
  const tally = (outcome: string) => {
    let d = discordant.get(outcome);
    if (d === undefined) {
      d = { onlyA: 0, onlyB: 0 };
      discordant.set(outcome, d);
    }
    return d;
  };
  for (const slot of both) {
    const outcomeA = a.outcome(slot);
    const outcomeB = b.outcome(slot);
    if (outcomeA === null || outcomeB === null) continue;
    compared++;
    tally(outcomeA);
    tally(outcomeB);
    if (outcomeA === outcomeB) continue;
    flippedCount++;
    tally(outcomeA).onlyA++;
    tally(outcomeB).onlyB++;
    const itemA = a.item(slot);
    const itemB = b.item(slot);
    if (flips.length < FLIPS_SHOWN && itemA && itemB) {
      flips.push({
        a: itemLink(itemA),
        b: itemLink(itemB),
        outcomeA: a.outcomeLabel(slot) ?? outcomeA,
        outcomeB: b.outcomeLabel(slot) ?? outcomeB,
        seatA: seatOfSubject(outcomeA),
        seatB: seatOfSubject(outcomeB),
      });
    }
  }
  const outcomes = [...discordant.keys()].sort((x, y) => {
    const seatX = seatOfSubject(x);
    const seatY = seatOfSubject(y);
    if (seatX !== null && seatY !== null) return seatX - seatY;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  const mcnemar = outcomes.map((outcome) => {
    const d = discordant.get(outcome) ?? { onlyA: 0, onlyB: 0 };
    return exactMcNemar(d.onlyA, d.onlyB);
  });
  const adjusted = mcnemar.length > 1 ? holmAdjust(mcnemar.map((t) => t.pValue)) : null;
  const flipTests = outcomes.map((outcome, i): ComparisonFlipTest => {
    const seat = seatOfSubject(outcome);
    return {
      outcome: seat !== null ? seatName(seat) : outcome,
      seat,
      onlyA: mcnemar[i].onlyA,
      onlyB: mcnemar[i].onlyB,
      pValue: mcnemar[i].pValue,
      holmAdjustedPValue: adjusted?.[i] ?? null,
      method: mcnemar[i].method,
      unit: 'item pair',
    };
  });
  const usageA = modelUsage(aggregates.a, new Map(), { ...bootstrap, seed: `${options.seed}:a` });
  const usageB = modelUsage(aggregates.b, new Map(), { ...bootstrap, seed: `${options.seed}:b` });
  const clusteredFailedCalls = [...usageA, ...usageB].some(
    (m) => m.failedCalls.interval?.method === 'item-cluster-bootstrap',
  );
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
  // Notes are the server's own sentences (never a model id): `seats` names the models.
  for (const seat of seats.filter((x) => x.changed)) {
    notes.push(
      `Seat ${seat.seat} held a different model in A than in B (see seats): its figures are compared by seat, ` +
        'and a pair it won on both sides is not a flip.',
    );
  }
  notes.push(
    seats.length > 0
      ? 'Differences are B − A over pairs where both items are complete; per-model figures are keyed by seat (roster position), and a seat absent from one side of a pair drops that pair from its figures.'
      : 'Differences are B − A over pairs where both items are complete; a model absent from one side of a pair drops that pair from its figures.',
  );
  const many = multipleComparisonNote(differences.length);
  if (many !== null) notes.push(many);
  if (flipTests.length > 1) {
    notes.push(
      `Flips are tested per outcome (${flipTests.length} exact McNemar tests): read the Holm-adjusted p-values, which hold the chance of any false alarm among them at 5 %.`,
    );
  }
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
    flipTests,
    seats,
    usage: { a: usageSummary(aggregates.a.usage), b: usageSummary(aggregates.b.usage) },
    models: models as { model: string; a: ReportModelUsage | null; b: ReportModelUsage | null }[],
    method: {
      confidence: DEFAULT_CONFIDENCE,
      resamples: bootstrap.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES,
      seed: options.seed,
      methods: comparisonMethods({
        resamples: bootstrap.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES,
        seed: options.seed,
        differences: differences.length > 0,
        flipTests: flipTests.length,
        clusteredFailedCalls,
      }),
    },
    notes,
  };
}

import type { ComparedBatch, MessageStatus, ModeName } from '@conclave/contracts';
import { ComparisonSide, compareSides, type ComparisonMeta } from './compare';
import type { ReportAggregates, ReportItem, ReportStageRow } from './rows';

const EMPTY: ReportAggregates = {
  calls: [],
  stageCalls: [],
  usage: {
    items: 0,
    promptTokens: 0,
    completionTokens: 0,
    costUsd: 0,
    costMean: null,
    costP50: null,
    costP95: null,
    durationItems: 0,
    durationP50: null,
    durationP95: null,
    okCalls: 0,
    latencyP50: null,
    latencyP95: null,
  },
  failures: [],
};

const item = (mode: ModeName, index: number): ReportItem => ({
  index,
  messageId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
  mode,
  status: 'complete' as MessageStatus,
  reference: null,
  key: null,
});

const row = (
  stageType: string,
  model: string | null,
  data: Record<string, unknown> | null,
  participant: number | null = null,
): ReportStageRow => ({ stageType, model, participant, data });

/**
 * A vote item: the roster's answers (participant = 0-based roster position), labels in roster
 * order, and the winner at roster position `winner` (0-based).
 */
function voteRows(roster: string[], winner: number): ReportStageRow[] {
  const labels = Object.fromEntries(roster.map((m, i) => [`Response ${String.fromCharCode(65 + i)}`, m]));
  const winnerLabel = `Response ${String.fromCharCode(65 + winner)}`;
  return [
    ...roster.map((m, i) => row('initial_answer', m, {}, i)),
    row('vote_label_map', null, labels),
    ...roster.map((m, i) => row('vote', m, { votedFor: winnerLabel }, i)),
    row('vote_tally', null, {
      tallies: { [winnerLabel]: roster.length },
      validVoteCount: roster.length,
      invalidVoteCount: 0,
      isTie: false,
      tiedLabels: [],
    }),
    row('vote_winner', roster[winner], { winnerLabel, winnerModel: roster[winner] }, winner),
  ];
}

const batch = (batchId: string): ComparedBatch => ({
  batchId,
  name: null,
  status: 'complete',
  partial: false,
  items: { total: 0, complete: 0, failed: 0, cancelled: 0, unfinished: 0 },
});
const META: ComparisonMeta = {
  a: batch('a'),
  b: batch('b'),
  matchedBy: 'index',
  unmatched: { onlyInA: [], onlyInB: [], onlyInACount: 0, onlyInBCount: 0 },
};

function side(roster: string[], winners: number[]): ComparisonSide {
  const s = new ComparisonSide('vote', winners.length);
  winners.forEach((winner, i) => s.add(i, item('vote', i), voteRows(roster, winner)));
  return s;
}

describe('comparison by seat', () => {
  // Seat 2's model is renamed between the batches (sim/vd:voteA → sim/vd); it wins items 0–2 on
  // both sides. Item 3 really flips, from seat 1 to seat 3.
  const a = side(['sim/a', 'sim/vd:voteA', 'sim/c'], [1, 1, 1, 0, 2]);
  const b = side(['sim/a', 'sim/vd', 'sim/c'], [1, 1, 1, 2, 2]);
  const c = compareSides(a, b, META, { a: EMPTY, b: EMPTY }, { seed: 'a:b', resamples: 200 });

  it('keeps the renamed seat’s figures on both sides and names the change', () => {
    const seat2 = c.differences.find((d) => d.measure === 'win rate' && d.seat === 2)!;
    expect(seat2).toMatchObject({ subject: 'seat 2: sim/vd:voteA → sim/vd', a: 0.6, b: 0.6 });
    expect(seat2.difference).toMatchObject({ value: 0, n: 5 });
    expect(c.differences.filter((d) => d.measure === 'win rate').map((d) => d.subject)).toEqual([
      'seat 1: sim/a',
      'seat 2: sim/vd:voteA → sim/vd',
      'seat 3: sim/c',
    ]);
    expect(c.seats).toEqual([
      { seat: 1, a: ['sim/a'], b: ['sim/a'], changed: false },
      { seat: 2, a: ['sim/vd:voteA'], b: ['sim/vd'], changed: true },
      { seat: 3, a: ['sim/c'], b: ['sim/c'], changed: false },
    ]);
    expect(c.notes.join(' ')).toMatch(/Seat 2 held a different model in A than in B/);
  });

  it('counts only a change of seat as a flip', () => {
    // Keyed by model, the three items seat 2 won on both sides were counted as flips (4 of 5).
    expect(c.flipped).toMatchObject({ count: 1, n: 5 });
    expect(c.flips).toEqual([
      expect.objectContaining({ outcomeA: 'sim/a', outcomeB: 'sim/c', seatA: 1, seatB: 3 }),
    ]);
  });

  it('tests the flips per outcome with exact McNemar, Holm-adjusted across outcomes', () => {
    expect(c.flipTests.map((t) => [t.outcome, t.onlyA, t.onlyB])).toEqual([
      ['seat 1: sim/a', 1, 0],
      ['seat 2: sim/vd:voteA → sim/vd', 0, 0],
      ['seat 3: sim/c', 0, 1],
    ]);
    // One discordant pair: p = 2 · ½ = 1 (exact binomial, two-sided).
    expect(c.flipTests.map((t) => t.pValue)).toEqual([1, 1, 1]);
    expect(c.flipTests.every((t) => t.holmAdjustedPValue === 1 && t.unit === 'item pair')).toBe(true);
    expect(c.flipTests[0].method).toMatch(/exact McNemar/);
    expect(c.method.methods.map((m) => m.name)).toEqual([
      'paired percentile bootstrap over item pairs',
      'Wilson score interval',
      'exact McNemar test',
      'Holm step-down adjustment',
    ]);
  });

  it('gives a small p-value when one seat wins far more often in B', () => {
    const many = 12;
    const x = side(['sim/a', 'sim/b'], new Array<number>(many).fill(0));
    const y = side(['sim/a', 'sim/b'], new Array<number>(many).fill(1));
    const d = compareSides(x, y, META, { a: EMPTY, b: EMPTY }, { seed: 's', resamples: 100 });
    const seat1 = d.flipTests.find((t) => t.seat === 1)!;
    expect(seat1).toMatchObject({ onlyA: 12, onlyB: 0 });
    // 2 · 0.5^12 (R: binom.test(12, 12)$p.value = 0.0004882812), Holm over the two seats: × 2.
    expect(seat1.pValue).toBeCloseTo(2 * 0.5 ** 12, 12);
    expect(seat1.holmAdjustedPValue).toBeCloseTo(4 * 0.5 ** 12, 12);
  });
});

describe('council comparison by seat', () => {
  /** A council item: labels in roster order, every member ranks the roster's `best` first. */
  function councilRows(roster: string[], best: number): ReportStageRow[] {
    const labels = roster.map((_, i) => `Response ${String.fromCharCode(65 + i)}`);
    const order = [labels[best], ...labels.filter((_, i) => i !== best)];
    return [
      row('stage2_label_map', null, Object.fromEntries(roster.map((m, i) => [labels[i], m]))),
      ...roster.map((m) => row('stage2', m, { parsedRanking: order })),
      row('stage2_aggregate', null, {
        aggregateRankings: [
          { model: roster[best] },
          ...roster.filter((_, i) => i !== best).map((model) => ({ model })),
        ],
      }),
    ];
  }
  function side(roster: string[], bests: number[]): ComparisonSide {
    const s = new ComparisonSide('council', bests.length);
    bests.forEach((best, i) => s.add(i, item('council', i), councilRows(roster, best)));
    return s;
  }

  it('keys average rank by seat and does not count a renamed winner as a flip', () => {
    const a = side(['sim/a', 'sim/b:v1', 'sim/c'], [1, 1, 0]);
    const b = side(['sim/a', 'sim/b:v2', 'sim/c'], [1, 1, 0]);
    const c = compareSides(a, b, META, { a: EMPTY, b: EMPTY }, { seed: 'a:b', resamples: 50 });
    expect(c.flipped).toMatchObject({ count: 0, n: 3 });
    const rank = c.differences.find((d) => d.measure === 'average rank' && d.seat === 2)!;
    expect(rank).toMatchObject({ subject: 'seat 2: sim/b:v1 → sim/b:v2', a: 4 / 3, b: 4 / 3 });
    expect(rank.difference.n).toBe(3);
  });
});

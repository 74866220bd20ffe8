import type { MessageStatus, ReportInterval, ReportRate } from '@conclave/contracts';
import { BatchReportBuilder, modelUsage } from './batch-report';
import { ComparisonSide, compareSides } from './compare';
import { pooledRate, rate } from './figures';
import type { ReportAggregates, ReportItem, ReportStageRow } from './rows';

/**
 * Issue 36, item 2: shares pooled over items whose trials are not independent (the votes on one
 * item, one model's answers or calls on one item) resample items (item-cluster bootstrap); shares
 * with at most one trial per item keep Wilson's interval.
 */

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

const META = {
  batchId: 'b',
  name: null,
  status: 'complete' as const,
  generatedAt: '2026-01-01T00:00:00.000Z',
};

const width = (interval: ReportInterval | null) =>
  interval === null ? NaN : interval.upper - interval.lower;

let ids = 0;
function item(index: number, mode: ReportItem['mode'] = 'vote'): ReportItem {
  ids++;
  return {
    index,
    messageId: `00000000-0000-4000-9000-${String(ids).padStart(12, '0')}`,
    mode,
    status: 'complete' as MessageStatus,
    reference: null,
    key: null,
  };
}

const row = (
  stageType: string,
  model: string | null,
  data: Record<string, unknown> | null,
  participant: number | null = null,
): ReportStageRow => ({ stageType, model, participant, data });

const LABELS = ['Response A', 'Response B', 'Response C'];
const MODELS = ['sim/a', 'sim/b', 'sim/c'];

/**
 * A vote item on which all three voters agree: they all vote for the label at `position` (1–3),
 * or, when `invalid`, none of them gives a readable vote.
 */
function agreeingVoteItem(index: number, position: number, invalid = false): [ReportItem, ReportStageRow[]] {
  const map = Object.fromEntries(LABELS.map((label, i) => [label, MODELS[(i + index) % 3]]));
  const chosen = LABELS[position - 1];
  return [
    item(index),
    [
      ...MODELS.map((model, i) => row('initial_answer', model, {}, i + 1)),
      row('vote_label_map', null, map),
      ...MODELS.map((model, i) => row('vote', model, { votedFor: invalid ? null : chosen }, i + 1)),
      row('vote_tally', null, {
        tallies: invalid ? {} : { [chosen]: 3 },
        validVoteCount: invalid ? 0 : 3,
        invalidVoteCount: invalid ? 3 : 0,
        isTie: false,
        tiedLabels: [],
      }),
      ...(invalid
        ? []
        : [
            row('vote_winner', map[chosen], {
              winnerLabel: chosen,
              winnerModel: map[chosen],
              tiebroken: false,
              tiebreakerMethod: null,
            }),
          ]),
    ],
  ];
}

describe('pooledRate', () => {
  it('keeps Wilson when every item has at most one trial', () => {
    const clusters = [1, 0, 1, 1, 0, 0, 1, 0].map((s) => ({ successes: s, trials: 1 }));
    expect(pooledRate(clusters, { seed: 's' })).toEqual(rate(4, 8));
  });

  it('resamples items when an item has several trials, wider than Wilson when its trials agree', () => {
    // 30 items of 4 trials each; on every item all four trials agree.
    const clusters = Array.from({ length: 30 }, (_, i) => ({ successes: i % 3 === 0 ? 4 : 0, trials: 4 }));
    const clustered = pooledRate(clusters, { seed: 's', resamples: 1000 });
    const wilson = rate(40, 120);
    expect(clustered).toMatchObject({ value: 40 / 120, count: 40, n: 120 });
    expect(clustered.interval?.method).toBe('item-cluster-bootstrap');
    // Four agreeing trials carry about one item's information: the interval is about √4 = 2×
    // Wilson's (allow for the bootstrap's noise).
    expect(width(clustered.interval)).toBeGreaterThan(1.5 * width(wilson.interval));
    // reproducible from the seed
    expect(pooledRate(clusters, { seed: 's', resamples: 1000 })).toEqual(clustered);
  });
});

describe('shares clustered by item in a batch report', () => {
  /** 30 items, every voter on an item agreeing; the chosen position cycles, every 5th item all invalid. */
  function report() {
    const builder = new BatchReportBuilder({ seed: 'clusters', resamples: 500 });
    for (let i = 0; i < 30; i++) {
      const [it, rows] = agreeingVoteItem(i, (i % 3) + 1, i % 5 === 4);
      builder.addItem(it, rows);
    }
    return builder.result(META, EMPTY);
  }

  it('votes by position: each position’s share resamples items, wider than Wilson', () => {
    const vote = report().vote!;
    const positions = vote.positionBias.groups[0].positions;
    expect(positions.map((p) => p.votes.n)).toEqual([72, 72, 72]);
    for (const position of positions) {
      const votes: ReportRate = position.votes;
      expect(votes.interval?.method).toBe('item-cluster-bootstrap');
      expect(width(votes.interval)).toBeGreaterThan(1.3 * width(rate(votes.count, votes.n).interval));
    }
  });

  it('invalid votes: the share resamples items, wider than Wilson', () => {
    const vote = report().vote!;
    expect(vote.invalidVotes).toMatchObject({ count: 18, n: 90 });
    expect(vote.invalidVotes.interval?.method).toBe('item-cluster-bootstrap');
    expect(width(vote.invalidVotes.interval)).toBeGreaterThan(1.3 * width(rate(18, 90).interval));
  });

  it('parse failures per model: Wilson with one answer per item, clustered with several', () => {
    // Each model votes once per item: its parse failures are one trial per item.
    const models = report().models;
    expect(models.find((m) => m.model === 'sim/a')?.parseFailures).toMatchObject({ count: 6, n: 30 });
    expect(models.find((m) => m.model === 'sim/a')?.parseFailures.interval?.method).toBe('wilson-score');
    // A model answering three times per item (three Delphi rounds), all unreadable on a third of items.
    const perItem = Array.from({ length: 30 }, (_, i) => ({ successes: i % 3 === 0 ? 3 : 0, trials: 3 }));
    const [usage] = modelUsage(EMPTY, new Map([['sim/p', { parsed: 60, failed: 30, perItem }]]), {
      seed: 'clusters',
      resamples: 500,
    });
    expect(usage.parseFailures).toMatchObject({ count: 30, n: 90 });
    expect(usage.parseFailures.interval?.method).toBe('item-cluster-bootstrap');
    expect(width(usage.parseFailures.interval)).toBeGreaterThan(1.3 * width(rate(30, 90).interval));
  });

  it('failed calls per model: clustered by item from the per-item counts, Wilson without them', () => {
    const call = {
      model: 'sim/x',
      calls: 120,
      failed: 40,
      promptTokens: 0,
      completionTokens: 0,
      costUsd: 0,
      okCalls: 80,
      latencyP50: null,
      latencyP95: null,
    };
    // 10 items whose 4 calls all failed, 20 whose 4 calls all succeeded.
    const perItem = [
      { calls: 4, failed: 0, items: 20 },
      { calls: 4, failed: 4, items: 10 },
    ];
    const [clustered] = modelUsage({ ...EMPTY, calls: [{ ...call, perItem }] }, new Map(), {
      seed: 'clusters',
      resamples: 500,
    });
    expect(clustered.failedCalls).toMatchObject({ count: 40, n: 120 });
    expect(clustered.failedCalls.interval?.method).toBe('item-cluster-bootstrap');
    expect(width(clustered.failedCalls.interval)).toBeGreaterThan(1.3 * width(rate(40, 120).interval));
    const [plain] = modelUsage({ ...EMPTY, calls: [call] }, new Map());
    expect(plain.failedCalls).toEqual(rate(40, 120));
  });

  it('names the item-cluster bootstrap, unit item, for each clustered figure in the methods list', () => {
    const methods = report().method.methods;
    const cluster = methods.find((m) => m.name === 'item-cluster bootstrap');
    expect(cluster).toMatchObject({ unit: 'item', resamples: 500, seed: 'clusters' });
    expect(cluster?.usedFor).toEqual(
      expect.arrayContaining(['vote share', 'invalid votes', 'votes by position']),
    );
    // Per-item figures keep Wilson: win rate, tied items, and the one-vote-per-item parse failures.
    const wilson = methods.filter((m) => m.name === 'Wilson score interval').flatMap((m) => m.usedFor);
    expect(wilson).toEqual(expect.arrayContaining(['win rate', 'tied items', 'parse failures']));
    expect(wilson).not.toContain('votes by position');
    expect(wilson).not.toContain('invalid votes');
  });

  it('council: unparsed rankings resample items, each with all its members’ rankings', () => {
    const labels = { 'Response A': 'sim/a', 'Response B': 'sim/b', 'Response C': 'sim/c' };
    const builder = new BatchReportBuilder({ seed: 'council', resamples: 500 });
    for (let i = 0; i < 30; i++) {
      // On every third item no member's ranking can be read; on the others all can.
      const unread = i % 3 === 0;
      builder.addItem(item(i, 'council'), [
        row('stage2_label_map', null, labels),
        ...MODELS.map((model) =>
          row('stage2', model, {
            parsedRanking: unread ? [] : ['Response A', 'Response B', 'Response C'],
            parseSuccess: !unread,
          }),
        ),
      ]);
    }
    const council = builder.result(META, EMPTY).council!;
    expect(council.unparsedRankings).toMatchObject({ count: 30, n: 90 });
    expect(council.unparsedRankings.interval?.method).toBe('item-cluster-bootstrap');
    expect(width(council.unparsedRankings.interval)).toBeGreaterThan(1.3 * width(rate(30, 90).interval));
  });

  it('debate: revision decisions stay Wilson with one per item, clustered for a model on two seats', () => {
    const builder = new BatchReportBuilder({ seed: 'debate', resamples: 500 });
    for (let i = 0; i < 20; i++) {
      const decision = i % 2 === 0 ? 'REVISE' : 'STAND';
      builder.addItem(item(i, 'debate'), [
        row('initial_answer', 'sim/a', {}, 1),
        row('initial_answer', 'sim/a', {}, 2),
        row('initial_answer', 'sim/b', {}, 3),
        // sim/a sits twice and decides alike on both seats; sim/b decides once.
        row('revision', 'sim/a', { decision, parseSuccess: true }, 1),
        row('revision', 'sim/a', { decision, parseSuccess: true }, 2),
        row('revision', 'sim/b', { decision, parseSuccess: true }, 3),
      ]);
    }
    const revisions = builder.result(META, EMPTY).debate!.revisions;
    const a = revisions.find((r) => r.model === 'sim/a')!;
    const b = revisions.find((r) => r.model === 'sim/b')!;
    expect(a.revise).toMatchObject({ count: 20, n: 40 });
    expect(a.revise.interval?.method).toBe('item-cluster-bootstrap');
    expect(width(a.revise.interval)).toBeGreaterThan(1.2 * width(rate(20, 40).interval));
    expect(b.revise).toEqual(rate(10, 20));
  });

  it('delphi: movement toward the median resamples items, each with all its panelists', () => {
    const builder = new BatchReportBuilder({ seed: 'delphi', resamples: 500 });
    const estimate = (round: number, participant: number, value: number, previous: number | null) =>
      row(
        `round_${round}`,
        `sim/p${participant}`,
        { round, type: 'numeric', estimate: value, previousEstimate: previous, carriedForward: false },
        participant,
      );
    for (let i = 0; i < 30; i++) {
      // On every third item all three panelists move toward the median; on the others none moves.
      const toward = i % 3 === 0;
      builder.addItem(item(i, 'delphi'), [
        row('classify', 'sim/f', { type: 'numeric' }),
        estimate(1, 0, 100, null),
        estimate(1, 1, 210, null),
        estimate(1, 2, 300, null),
        row('round_1_stats', null, { median: 200, mean: 203, cv: 0.41, converged: false }),
        estimate(2, 0, toward ? 150 : 100, 100),
        estimate(2, 1, toward ? 205 : 210, 210),
        estimate(2, 2, toward ? 250 : 300, 300),
        row('round_2_stats', null, { median: 200, mean: 200, cv: 0.2, converged: true }),
      ]);
    }
    const report = builder.result(META, EMPTY);
    const movement = report.delphi!.movement[0];
    expect(movement.movedTowardMedian).toMatchObject({ count: 30, n: 90 });
    expect(movement.movedTowardMedian.interval?.method).toBe('item-cluster-bootstrap');
    expect(width(movement.movedTowardMedian.interval)).toBeGreaterThan(1.3 * width(rate(30, 90).interval));
    // Each panelist answers in both rounds: its parse failures pool two answers per item; all of
    // them parsed here, so resampling items shows no spread and Wilson over the items stands in.
    const parseFailures = report.models.find((m) => m.model === 'sim/p0')?.parseFailures;
    expect(parseFailures?.interval?.method).toBe('wilson-score');
    expect(parseFailures?.note).toMatch(/every item gave the same share/);
  });

  it('a comparison names the item-cluster bootstrap when a side’s failed calls are clustered', () => {
    const side = () => {
      const s = new ComparisonSide('vote', 1);
      const [it, rows] = agreeingVoteItem(0, 1);
      s.add(0, it, rows);
      return s;
    };
    const meta = {
      a: {
        batchId: 'x',
        name: null,
        status: 'complete' as const,
        partial: false,
        items: { total: 1, complete: 1, failed: 0, cancelled: 0, unfinished: 0 },
      },
      b: {
        batchId: 'y',
        name: null,
        status: 'complete' as const,
        partial: false,
        items: { total: 1, complete: 1, failed: 0, cancelled: 0, unfinished: 0 },
      },
      matchedBy: 'index' as const,
      unmatched: { onlyInA: [], onlyInB: [], onlyInACount: 0, onlyInBCount: 0 },
    };
    const call = {
      model: 'sim/a',
      calls: 8,
      failed: 4,
      promptTokens: 0,
      completionTokens: 0,
      costUsd: 0,
      okCalls: 4,
      latencyP50: null,
      latencyP95: null,
      perItem: [
        { calls: 2, failed: 2, items: 2 },
        { calls: 2, failed: 0, items: 2 },
      ],
    };
    const plain = compareSides(side(), side(), meta, { a: EMPTY, b: EMPTY }, { seed: 'cmp', resamples: 100 });
    expect(plain.method.methods.map((m) => m.name)).not.toContain('item-cluster bootstrap');
    const clustered = compareSides(
      side(),
      side(),
      meta,
      { a: { ...EMPTY, calls: [call] }, b: EMPTY },
      { seed: 'cmp', resamples: 100 },
    );
    expect(clustered.models[0].a?.failedCalls.interval?.method).toBe('item-cluster-bootstrap');
    expect(clustered.method.methods.find((m) => m.name === 'item-cluster bootstrap')).toMatchObject({
      usedFor: ['failed calls'],
      unit: 'item',
      resamples: 100,
      seed: 'cmp',
    });
  });
});

import type { MessageStatus, ModeName } from '@conclave/contracts';
import { bootstrapMean, pairedBootstrap } from '../bootstrap';
import { FleissKappaAccumulator } from '../fleiss';
import { bootstrapMeans } from './bootstrap-columns';
import { KrippendorffAlphaAccumulator } from '../krippendorff';
import { BatchReportBuilder } from './batch-report';
import { ComparisonSide, compareSides } from './compare';
import { delphiInterval } from './extract';
import { chiSquareUpperTail } from './figures';
import { predictionInterval } from './reference';
import type { ReportAggregates, ReportItem, ReportStageRow } from './rows';

const DIMENSIONS = ['accuracy', 'completeness', 'clarity', 'relevance', 'actionability'];

let ids = 0;
function item(mode: ModeName, index: number, extra: Partial<ReportItem> = {}): ReportItem {
  ids++;
  return {
    index,
    messageId: `00000000-0000-4000-8000-${String(ids).padStart(12, '0')}`,
    mode,
    status: 'complete' as MessageStatus,
    reference: null,
    key: null,
    ...extra,
  };
}

const row = (
  stageType: string,
  model: string | null,
  data: Record<string, unknown> | null,
  participant: number | null = null,
): ReportStageRow => ({
  stageType,
  model,
  participant,
  data,
});

const scores = (value: number) => Object.fromEntries(DIMENSIONS.map((d) => [d, value]));

function juror(
  model: string,
  seat: number,
  score: number,
  verdict: string | null,
  parseSuccess = true,
): ReportStageRow {
  return row('deliberation', model, { scores: scores(score), average: score, verdict, parseSuccess }, seat);
}

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

/** Three jury items: j1 always scores 2–3 points above the other two. */
function juryItems(): [ReportItem, ReportStageRow[]][] {
  return [
    [
      item('jury', 0, { reference: 'revise' }),
      [
        juror('sim/j1', 1, 9, 'APPROVE'),
        juror('sim/j2', 2, 6, 'REVISE'),
        juror('sim/j3', 3, 6, 'REVISE'),
        row('juror_summary', null, { majorityVerdict: 'REVISE' }),
        row('verdict', 'sim/f', { finalVerdict: 'REVISE' }),
      ],
    ],
    [
      item('jury', 1),
      [
        juror('sim/j1', 1, 8, 'APPROVE'),
        juror('sim/j2', 2, 5, 'REVISE'),
        juror('sim/j3', 3, 5, 'REJECT', false),
        row('juror_summary', null, { majorityVerdict: 'REVISE' }),
      ],
    ],
    [
      item('jury', 2, { reference: 'APPROVE' }),
      [
        juror('sim/j1', 1, 7, 'APPROVE'),
        juror('sim/j2', 2, 7, 'APPROVE'),
        juror('sim/j3', 3, 7, 'APPROVE'),
        row('juror_summary', null, { majorityVerdict: 'APPROVE' }),
        row('verdict', 'sim/f', { finalVerdict: 'APPROVE' }),
      ],
    ],
  ];
}

describe('batch report builders on hand-made rows', () => {
  it('jury: verdicts, leniency, agreement, disagreement, reference', () => {
    const builder = new BatchReportBuilder({ seed: 'b', resamples: 200 });
    for (const [i, rows] of juryItems()) builder.addItem(i, rows);
    builder.addItem(item('jury', 3, { status: 'running' }), []);
    const report = builder.result({ ...META, status: 'running' }, EMPTY);
    expect(report.partial).toBe(true);
    expect(report.items).toEqual({ total: 4, complete: 3, failed: 0, cancelled: 0, unfinished: 1 });
    const jury = report.jury!;
    expect(jury.items).toBe(3);
    expect(jury.verdicts.categories).toEqual([
      { category: 'APPROVE', count: 1, share: 1 / 3 },
      { category: 'REVISE', count: 2, share: 2 / 3 },
      { category: 'REJECT', count: 0, share: 0 },
    ]);
    expect(jury.jurorVerdicts.n).toBe(9);

    // j1: +2, +2, 0 against the panel mean → 4/3; j2 and j3: −1, −1, 0 → −2/3.
    const [first, ...others] = jury.jurors;
    expect(first.juror).toBe('sim/j1');
    expect(first.leniency.value).toBeCloseTo(4 / 3, 10);
    expect(first.leniency.n).toBe(3);
    // Student t with n − 1 = 2 degrees of freedom (SciPy: t.ppf(0.975, 2) = 4.302652729749462) on the
    // standard error 2/3 (sd of 2, 2, 0 is √(4/3), over √3), not z's 1.96
    expect(first.leniency.interval?.method).toBe('student-t');
    expect(first.leniency.interval?.upper).toBeCloseTo(4 / 3 + 4.302652729749462 * (2 / 3), 9);
    for (const other of others) expect(other.leniency.value).toBeCloseTo(-2 / 3, 10);
    expect(first.dimensions.map((d) => d.dimension)).toEqual(DIMENSIONS);
    expect(jury.jurors.find((j) => j.juror === 'sim/j3')?.parseFailures).toMatchObject({ count: 1, n: 3 });

    const accuracy = jury.dimensions.find((d) => d.dimension === 'accuracy')!;
    expect(accuracy.scores).toMatchObject({ n: 9, min: 5, max: 9 });
    expect(accuracy.itemMean.value).toBeCloseTo((7 + 6 + 7) / 3, 10);
    expect(accuracy.itemMean.n).toBe(3);
    const alpha = new KrippendorffAlphaAccumulator();
    [
      [9, 6, 6],
      [8, 5, 5],
      [7, 7, 7],
    ].forEach((unit) => alpha.addUnit(unit));
    expect(accuracy.alpha.value).toBeCloseTo(alpha.result('interval').value as number, 12);
    expect(accuracy.alpha.n).toBe(3);
    expect(accuracy.distribution.categories.find((c) => c.category === '6')?.count).toBe(2);

    const fleiss = new FleissKappaAccumulator(['APPROVE', 'REVISE', 'REJECT']);
    fleiss.addRatings(['APPROVE', 'REVISE', 'REVISE']);
    fleiss.addRatings(['APPROVE', 'REVISE', 'REJECT']);
    fleiss.addRatings(['APPROVE', 'APPROVE', 'APPROVE']);
    expect(jury.fleissKappa.value).toBeCloseTo(fleiss.result().value as number, 12);
    expect(jury.fleissKappa.n).toBe(3);
    expect(jury.fleissKappa.reading).not.toBeNull();

    // Item 1 split three ways, item 0 two to one, item 2 not at all.
    expect(jury.mostDisagreement.map((d) => d.index)).toEqual([1, 0]);
    expect(jury.mostDisagreement[0]).toMatchObject({
      verdicts: { APPROVE: 1, REVISE: 1, REJECT: 1 },
      scoreSpread: 3,
    });
    expect(jury.mostDisagreement[0].webPath).toBe(`#/m/${jury.mostDisagreement[0].messageId}`);

    // The reference: 'revise' (any case) on item 0, APPROVE on item 2, none on items 1 and 3 (issue
    // 36, an intended change: counts are over all items, so the running item 3 now counts too).
    expect(jury.reference).toMatchObject({ itemsWithReference: 2, itemsWithoutReference: 2 });
    expect(jury.reference?.matching).toMatchObject({ count: 2, n: 2, value: 1 });
    expect(jury.reference?.cohen?.kappa.value).toBe(1);
    expect(jury.reference?.cohen?.confusion).toEqual([
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 0],
    ]);
    expect(report.models.find((m) => m.model === 'sim/j3')?.parseFailures).toMatchObject({ count: 1, n: 3 });
    expect(report.council).toBeNull();
    // Issue 36: the method summary also lists every test and interval method the report used.
    expect(report.method).toMatchObject({ confidence: 0.95, resamples: 200, seed: 'b' });
    expect(report.method.methods.map((m) => [m.name, m.unit])).toEqual([
      ['percentile bootstrap over items', 'item'],
      ['Student t interval', 'item'],
      ['Wilson score interval', 'answer'],
      ['Wilson score interval', 'item'],
    ]);
  });

  it('is reproducible: the same rows and seed give the same report', () => {
    const items = juryItems();
    const build = () => {
      const builder = new BatchReportBuilder({ seed: 'seed-1', resamples: 300 });
      for (const [i, rows] of items) builder.addItem(i, rows);
      return builder.result(META, EMPTY);
    };
    expect(build()).toEqual(build());
  });

  it('council: ranks, Borda, self-preference, chairman failures, no position bias', () => {
    const labels = { 'Response A': 'sim/a', 'Response B': 'sim/b', 'Response C': 'sim/c' };
    const ranking = (model: string, order: string[]) =>
      row('stage2', model, {
        parsedRanking: order.map((l) => `Response ${l}`),
        parseSuccess: order.length > 0,
      });
    const builder = new BatchReportBuilder({ seed: 'c', resamples: 100 });
    builder.addItem(item('council', 0, { reference: 'sim/a' }), [
      row('stage2_label_map', null, labels),
      ranking('sim/a', ['A', 'B', 'C']),
      ranking('sim/b', ['A', 'C', 'B']),
      ranking('sim/c', ['A', 'B', 'C']),
      row('stage2_aggregate', null, {
        aggregateRankings: [{ model: 'sim/a', averageRank: 1, rankingsCount: 3 }],
      }),
      row('stage3', 'sim/chair', {}),
    ]);
    builder.addItem(item('council', 1, { reference: 'sim/b' }), [
      row('stage2_label_map', null, labels),
      ranking('sim/a', ['A', 'B', 'C']),
      ranking('sim/b', []),
      ranking('sim/c', ['A', 'C', 'B']),
      row('stage2_aggregate', null, {
        aggregateRankings: [{ model: 'sim/a', averageRank: 1, rankingsCount: 2 }],
      }),
    ]);
    builder.addItem(item('council', 2, { status: 'failed' }), [row('stage2_label_map', null, labels)]);
    const report = builder.result(META, {
      ...EMPTY,
      stageCalls: [
        { mode: 'council', stage: 'stage3', model: 'sim/chair', calls: 3, failed: 1 },
        { mode: 'council', stage: 'stage2', model: 'sim/a', calls: 3, failed: 0 },
      ],
    });
    const council = report.council!;
    expect(council.items).toBe(2);
    expect(council.ballots).toBe(5);
    expect(council.unparsedRankings).toMatchObject({ count: 1, n: 6 });
    const a = council.models[0];
    expect(a.model).toBe('sim/a');
    expect(a.averageRank.value).toBe(1);
    expect(a.firstPlaceShare.value).toBe(1);
    expect(a.bordaPoints).toBe(5 * 2);
    // sim/a ranks itself 1st, as do the others: no self-preference.
    expect(a.selfPreference.difference.value).toBe(0);
    // sim/b: own rank 3 on item 0, the others gave it 2 and 2 → +1 (self-deprecating).
    const b = council.models.find((m) => m.model === 'sim/b')!;
    expect(b.selfPreference.n).toBe(1);
    expect(b.selfPreference.difference.value).toBe(1);
    expect(council.chairman.failures).toMatchObject({ count: 1, n: 3 });
    expect(council.positionBias.computable).toBe(false);
    expect(council.positionBias.explanation).toMatch(/cannot be computed/);
    expect(council.reference?.matching).toMatchObject({ count: 1, n: 2 });
    expect(council.reference?.mismatches.map((m) => [m.index, m.reference, m.outcome])).toEqual([
      [1, 'sim/b', 'sim/a'],
    ]);
    expect(report.models.find((m) => m.model === 'sim/b')?.parseFailures).toMatchObject({ count: 1, n: 2 });
  });

  it('vote: wins, ties and how they were broken, votes by position', () => {
    const builder = new BatchReportBuilder({ seed: 'v' });
    const vote = (voter: string, label: string | null, participant: number) =>
      row('vote', voter, { votedFor: label }, participant);
    // Item 0: sim/a at A wins 2–1. Item 1: sim/a at C wins 3–0. Item 2: tie A/B broken by the chairman for B (sim/b).
    builder.addItem(item('vote', 0), [
      row('initial_answer', 'sim/a', {}, 1),
      row('initial_answer', 'sim/b', {}, 2),
      row('initial_answer', 'sim/c', {}, 3),
      row('vote_label_map', null, { 'Response A': 'sim/a', 'Response B': 'sim/b', 'Response C': 'sim/c' }),
      vote('sim/a', 'Response A', 1),
      vote('sim/b', 'Response A', 2),
      vote('sim/c', 'Response B', 3),
      row('vote_tally', null, {
        tallies: { 'Response A': 2, 'Response B': 1 },
        validVoteCount: 3,
        invalidVoteCount: 0,
        isTie: false,
        tiedLabels: [],
      }),
      row(
        'vote_winner',
        'sim/a',
        { winnerLabel: 'Response A', winnerModel: 'sim/a', tiebroken: false, tiebreakerMethod: null },
        1,
      ),
    ]);
    builder.addItem(item('vote', 1), [
      row('initial_answer', 'sim/a', {}, 1),
      row('initial_answer', 'sim/b', {}, 2),
      row('initial_answer', 'sim/c', {}, 3),
      row('vote_label_map', null, { 'Response A': 'sim/b', 'Response B': 'sim/c', 'Response C': 'sim/a' }),
      vote('sim/a', 'Response C', 1),
      vote('sim/b', 'Response C', 2),
      vote('sim/c', 'Response C', 3),
      row('vote_tally', null, {
        tallies: { 'Response C': 3 },
        validVoteCount: 3,
        invalidVoteCount: 0,
        isTie: false,
        tiedLabels: [],
      }),
      row(
        'vote_winner',
        'sim/a',
        { winnerLabel: 'Response C', winnerModel: 'sim/a', tiebroken: false, tiebreakerMethod: null },
        1,
      ),
    ]);
    builder.addItem(item('vote', 2, { reference: 'sim/a' }), [
      row('initial_answer', 'sim/a', {}, 1),
      row('initial_answer', 'sim/b', {}, 2),
      row('initial_answer', 'sim/c', {}, 3),
      row('vote_label_map', null, { 'Response A': 'sim/a', 'Response B': 'sim/b', 'Response C': 'sim/c' }),
      vote('sim/a', 'Response A', 1),
      vote('sim/b', 'Response B', 2),
      vote('sim/c', null, 3),
      row('vote_tally', null, {
        tallies: { 'Response A': 1, 'Response B': 1 },
        validVoteCount: 2,
        invalidVoteCount: 1,
        isTie: true,
        tiedLabels: ['Response A', 'Response B'],
      }),
      row('tiebreak', 'sim/chair', { chosenLabel: 'Response B', method: 'chairman' }),
      row(
        'vote_winner',
        'sim/b',
        { winnerLabel: 'Response B', winnerModel: 'sim/b', tiebroken: true, tiebreakerMethod: 'chairman' },
        2,
      ),
    ]);
    const vote3 = builder.result(META, EMPTY).vote!;
    expect(vote3.items).toBe(3);
    expect(vote3.invalidVotes).toMatchObject({ count: 1, n: 9 });
    expect(vote3.models.map((m) => [m.model, m.wins, m.contests, m.tiedFirst, m.winsByTiebreak])).toEqual([
      ['sim/a', 2, 3, 1, 0],
      ['sim/b', 1, 3, 1, 1],
      ['sim/c', 0, 3, 0, 0],
    ]);
    expect(vote3.models[0].winRate.value).toBeCloseTo(2 / 3, 12);
    expect(vote3.models[0].winRate.interval?.method).toBe('wilson-score');
    expect(vote3.models[0].voteShare).toMatchObject({ count: 6, n: 8 });
    expect(vote3.ties.tied).toMatchObject({ count: 1, n: 3 });
    expect(vote3.ties.brokenBy).toEqual([
      { category: 'chairman', count: 1, share: 1 },
      { category: 'alphabetical', count: 0, share: 0 },
    ]);
    const group = vote3.positionBias.groups[0];
    expect(vote3.positionBias.computable).toBe(true);
    expect(group).toMatchObject({ answersShown: 3, items: 3, validVotes: 8 });
    expect(group.positions.map((p) => p.votes.count)).toEqual([3, 2, 3]);
    // three items are too few for a test whose unit is the item: not run, and the report says why
    expect(group.test).toEqual({
      run: false,
      items: 3,
      reason: 'fewer than 10 items with a valid vote (3): too few to test',
    });
    // the vote share's interval resamples items (votes on one item are not independent)
    expect(vote3.models[0].voteShare.interval?.method).toBe('item-cluster-bootstrap');
    expect(vote3.reference?.matching).toMatchObject({ count: 0, n: 1 });
  });

  it('debate: revision decisions and whether the winner revised', () => {
    const builder = new BatchReportBuilder({ seed: 'd' });
    builder.addItem(item('debate', 0), [
      row('initial_answer', 'sim/a', {}, 1),
      row('initial_answer', 'sim/b', {}, 2),
      row('revision', 'sim/a', { decision: 'REVISE', parseSuccess: true }, 1),
      row('revision', 'sim/b', { decision: null, parseSuccess: false }, 2),
      row('revised_label_map', null, { 'Response A': 'sim/b', 'Response B': 'sim/a' }),
      row('debate_vote', 'sim/a', { votedFor: 'Response B' }, 1),
      row('debate_vote', 'sim/b', { votedFor: 'Response B' }, 2),
      row('debate_vote_tally', null, {
        tallies: { 'Response B': 2 },
        validVoteCount: 2,
        invalidVoteCount: 0,
        isTie: false,
        tiedLabels: [],
        winners: ['Response B'],
      }),
      row(
        'debate_winner',
        'sim/a',
        { winnerLabel: 'Response B', winnerModel: 'sim/a', winnerDecision: 'REVISE', tiebroken: false },
        1,
      ),
    ]);
    const debate = builder.result(META, EMPTY).debate!;
    expect(debate.models[0]).toMatchObject({ model: 'sim/a', wins: 1, contests: 1 });
    expect(debate.revisions.find((r) => r.model === 'sim/a')?.revise).toMatchObject({ count: 1, n: 1 });
    expect(debate.revisions.find((r) => r.model === 'sim/b')?.unparsed).toMatchObject({ count: 1, n: 1 });
    expect(debate.winnerWasRevised).toMatchObject({ count: 1, n: 1 });
    expect(debate.positionBias.groups[0].positions.map((p) => p.votes.count)).toEqual([0, 2]);
    expect(debate.ties.brokenBy.map((b) => b.category)).toEqual(['alphabetical']);
  });

  it('delphi: convergence, movement toward the median, reference error and coverage', () => {
    const builder = new BatchReportBuilder({ seed: 'p', resamples: 100 });
    const estimate = (
      round: number,
      participant: number,
      value: number,
      previous: number | null,
      carriedForward = false,
    ) =>
      row(
        `round_${round}`,
        `sim/p${participant}`,
        { round, type: 'numeric', estimate: value, previousEstimate: previous, carriedForward },
        participant,
      );
    builder.addItem(item('delphi', 0, { reference: '200' }), [
      row('classify', 'sim/f', { type: 'numeric' }),
      estimate(1, 0, 100, null),
      estimate(1, 1, 200, null),
      estimate(1, 2, 300, null),
      row('round_1_stats', null, { median: 200, mean: 200, cv: 0.41, converged: false }),
      estimate(2, 0, 150, 100),
      estimate(2, 1, 200, 200),
      estimate(2, 2, 240, 300),
      row('round_2_stats', null, { median: 200, mean: 196.7, cv: 0.19, converged: true }),
      row('synthesis', 'sim/f', { totalRounds: 2, converged: true, finalValue: 590 / 3 }),
    ]);
    builder.addItem(item('delphi', 1, { reference: 50 }), [
      row('classify', 'sim/f', { type: 'numeric' }),
      estimate(1, 0, 100, null),
      estimate(1, 1, 100, null),
      estimate(1, 2, 100, null),
      row('round_1_stats', null, { median: 100, mean: 100, cv: 0, converged: true }),
    ]);
    const delphi = builder.result(META, EMPTY).delphi!;
    expect(delphi).toMatchObject({ items: 2, numericItems: 2, qualitativeItems: 0 });
    expect(delphi.converged).toMatchObject({ count: 2, n: 2 });
    expect(delphi.roundsToConvergence).toMatchObject({ n: 2, mean: 1.5 });
    expect(delphi.movement).toHaveLength(1);
    expect(delphi.movement[0]).toMatchObject({ round: 2, n: 3 });
    expect(delphi.movement[0].movedTowardMedian).toMatchObject({ count: 2, n: 3 });
    expect(delphi.movement[0].movedAway).toMatchObject({ count: 0, n: 3 });
    expect(delphi.movement[0].distanceClosed.value).toBeCloseTo((0.5 + 0.6) / 2, 12);
    expect(delphi.finalCv).toMatchObject({ n: 2 });
    const numeric = delphi.reference!.numeric!;
    // Issue 36 (an intended change): errors are measured on the final value the mode reports (the
    // synthesis row's finalValue, the last round's mean 590/3; the second item has no synthesis row,
    // so its last round's mean 100), no longer on the median (200, which matched item 0 exactly).
    // |590/3 − 200| = 10/3 and |100 − 50| = 50.
    expect(numeric.meanAbsoluteError.value).toBeCloseTo((10 / 3 + 50) / 2, 10);
    expect(numeric.meanSignedError.value).toBeCloseTo((-10 / 3 + 50) / 2, 10);
    // In percent: (100 · (10/3)/200 + 100 · 50/50) / 2.
    expect(numeric.meanAbsolutePercentageError.value).toBeCloseTo((5 / 3 + 100) / 2, 10);
    // 200 lies inside the prediction interval of [150, 200, 240] and their range; 50 is outside
    // both [100, 100].
    expect(numeric.predictionIntervalCoverage).toMatchObject({ count: 1, n: 2 });
    expect(numeric.finalRangeCoverage).toMatchObject({ count: 1, n: 2 });
    expect(delphi.reference?.matching).toMatchObject({ count: 0, n: 2 });
    expect(delphi.reference?.mismatches.map((m) => m.outcome)).toEqual(['100']);
  });

  it('jury: counts the assessments whose scores and verdicts were read, and uses each part where read', () => {
    const builder = new BatchReportBuilder({ seed: 'parts' });
    builder.addItem(item('jury', 0), [
      juror('sim/j1', 1, 8, 'APPROVE'),
      // Scores but no verdict: a parse failure whose scores still count (and no verdict does).
      juror('sim/j2', 2, 4, null, false),
      // A verdict and only two of five scores.
      row(
        'deliberation',
        'sim/j3',
        { scores: { accuracy: 6, clarity: 6 }, verdict: 'REVISE', parseSuccess: false },
        3,
      ),
      row('juror_summary', null, { majorityVerdict: 'REVISE' }),
    ]);
    const jury = builder.result(META, EMPTY).jury!;
    expect(jury.assessments).toEqual({ n: 3, allScoresRead: 2, someScoresRead: 3, verdictRead: 2 });
    const j2 = jury.jurors.find((j) => j.juror === 'sim/j2')!;
    expect(j2.parseFailures).toMatchObject({ count: 1, n: 1 });
    expect(j2.verdictUnread).toMatchObject({ count: 1, n: 1 });
    expect(j2.scoresUnread).toMatchObject({ count: 0, n: 1 });
    expect(jury.jurors.find((j) => j.juror === 'sim/j3')!.scoresUnread).toMatchObject({ count: 1, n: 1 });
    // Its scores are in the means and leniency; its missing verdict is not a verdict.
    const accuracy = jury.dimensions.find((d) => d.dimension === 'accuracy')!;
    expect(accuracy.scores).toMatchObject({ n: 3, mean: 6 });
    expect(jury.dimensions.find((d) => d.dimension === 'completeness')!.scores.n).toBe(2);
    expect(j2.leniency.value).not.toBeNull();
    expect(jury.jurorVerdicts.n).toBe(2);
  });

  it('predictionInterval: mean ± t(0.975, n − 1) · s · √(1 + 1/n), none below two estimates', () => {
    const values = [150, 200, 240];
    const mean = 590 / 3;
    const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / 2);
    // t(0.975, 2) = 4.302653 (R: qt(0.975, 2)).
    const half = 4.302653 * sd * Math.sqrt(1 + 1 / 3);
    const interval = predictionInterval(values)!;
    expect(interval.low).toBeCloseTo(mean - half, 4);
    expect(interval.high).toBeCloseTo(mean + half, 4);
    // Wider than the mean's confidence interval, which is what the old coverage figure used.
    // √(n + 1) = 2 times as wide as the mean's confidence interval the old coverage figure used.
    const confidence = delphiInterval(values)!;
    expect((interval.high - interval.low) / (confidence.high - confidence.low)).toBeCloseTo(2, 3);
    expect(predictionInterval([7])).toBeNull();
    expect(predictionInterval([7, 7])).toEqual({ low: 7, high: 7 });
  });

  it("reference counts are over all the mode's items, and those not compared are named", () => {
    const builder = new BatchReportBuilder({ seed: 'all' });
    const numericRows = (value: number) => [
      row('classify', 'sim/f', { type: 'numeric' }),
      row('round_1', 'sim/p0', { round: 1, type: 'numeric', estimate: value }, 0),
      row('round_1', 'sim/p1', { round: 1, type: 'numeric', estimate: value }, 1),
      row('round_1_stats', null, { median: value, mean: value, cv: 0, converged: true }),
      row('synthesis', 'sim/f', { finalValue: value }),
    ];
    builder.addItem(item('delphi', 0, { reference: 10 }), numericRows(10));
    builder.addItem(item('delphi', 1, { reference: 'lots' }), numericRows(10));
    builder.addItem(item('delphi', 2, { reference: 12, status: 'failed' }), []);
    builder.addItem(item('delphi', 3, { reference: 13, status: 'failed' }), []);
    builder.addItem(item('delphi', 4, { reference: 14, status: 'cancelled' }), []);
    builder.addItem(item('delphi', 5, { status: 'failed' }), []);
    builder.addItem(item('delphi', 6, { reference: null }), numericRows(3));
    builder.addItem(item('jury', 7, { reference: 'APPROVE', status: 'failed' }), []);
    builder.addItem(item('jury', 8, { reference: 'APPROVE', status: 'running' }), []);
    builder.addItem(item('jury', 9, { reference: 'APPROVE' }), [juror('sim/a', 0, 8, 'APPROVE')]);
    const report = builder.result({ ...META, status: 'running' }, EMPTY);
    const delphi = report.delphi!.reference!;
    // Before: "with a reference: 2 (without: 1)", the failed ones silently left out.
    expect(delphi).toMatchObject({ itemsWithReference: 5, itemsWithoutReference: 2 });
    expect(delphi.notCompared).toMatchObject({
      count: 4,
      failed: 2,
      cancelled: 1,
      unfinished: 0,
      noOutcome: 0,
      unusableReference: 1,
    });
    expect(delphi.notCompared.items.map((i) => [i.index, i.reason])).toEqual([
      [1, 'the reference cannot be compared with this outcome'],
      [2, 'the item failed'],
      [3, 'the item failed'],
      [4, 'the item was cancelled'],
    ]);
    expect(delphi.matching).toMatchObject({ count: 1, n: 1 });
    const jury = report.jury!.reference!;
    expect(jury).toMatchObject({ itemsWithReference: 3, itemsWithoutReference: 0 });
    // Item 9 is complete but has no final verdict (no foreman, no majority row).
    expect(jury.notCompared).toMatchObject({ count: 3, failed: 1, unfinished: 1, noOutcome: 1 });
    expect(report.notes).toContain(
      '4 delphi items failed or were cancelled and are not in the delphi statistics: items 2, 3, 4, 5.',
    );
    expect(report.notes).toContain(
      '1 jury item failed or was cancelled and is not in the jury statistics: item 7.',
    );
  });

  it('a section whose items all failed still counts their references', () => {
    const builder = new BatchReportBuilder({ seed: 'failed' });
    builder.addItem(item('delphi', 0, { reference: 1, status: 'failed' }), []);
    builder.addItem(item('delphi', 1, { reference: 2, status: 'failed' }), []);
    const reference = builder.result(META, EMPTY).delphi!.reference!;
    expect(reference).toMatchObject({ itemsWithReference: 2, itemsWithoutReference: 0 });
    expect(reference.notCompared).toMatchObject({ count: 2, failed: 2 });
    expect(reference.matching).toMatchObject({ count: 0, n: 0 });
  });

  it('delphiInterval recomputes the interval the Delphi report states', () => {
    const interval = delphiInterval([150, 200, 240])!;
    const mean = 590 / 3;
    const sd = Math.sqrt(((150 - mean) ** 2 + (200 - mean) ** 2 + (240 - mean) ** 2) / 2);
    expect(interval.low).toBeCloseTo(mean - (4.303 * sd) / Math.sqrt(3), 10);
    expect(interval.high).toBeCloseTo(mean + (4.303 * sd) / Math.sqrt(3), 10);
    expect(delphiInterval([7])).toEqual({ low: 7, high: 7 });
    expect(delphiInterval([])).toBeNull();
  });

  it('failures: groups as aggregated, the rest counted', () => {
    const builder = new BatchReportBuilder({ seed: 'f' });
    for (let i = 0; i < 3; i++) builder.addItem(item('jury', i, { status: 'failed' }), []);
    builder.addItem(item('jury', 3, { status: 'cancelled' }), []);
    const report = builder.result(META, {
      ...EMPTY,
      failures: [{ error: 'x'.repeat(600), count: 2, examples: [{ index: 0, messageId: 'm0', key: 'k0' }] }],
    });
    expect(report.failures.failedItems).toMatchObject({ count: 3, n: 4 });
    expect(report.failures.cancelledItems).toBe(1);
    expect(report.failures.groups[0].error).toHaveLength(501);
    expect(report.failures.groups[0].examples[0]).toEqual({
      index: 0,
      key: 'k0',
      messageId: 'm0',
      webPath: '#/m/m0',
    });
    expect(report.failures.otherFailedItems).toBe(1);
    expect(report.jury?.items).toBe(0);
    expect(report.notes.join(' ')).toMatch(/No jury item is complete/);
  });
});

describe('comparison of two sides', () => {
  function side(verdicts: (string | null)[], score = 7): ComparisonSide {
    const s = new ComparisonSide('jury', verdicts.length);
    verdicts.forEach((verdict, i) =>
      s.add(
        i,
        item('jury', i, verdict === null ? { status: 'failed' } : {}),
        verdict === null
          ? []
          : [
              juror('sim/j1', 1, score, verdict),
              juror('sim/j2', 2, score, verdict),
              row('verdict', 'sim/f', { finalVerdict: verdict }),
            ],
      ),
    );
    return s;
  }
  const meta = (matchedBy: 'key' | 'index' = 'index') => {
    const batch = {
      batchId: 'x',
      name: null,
      status: 'complete' as const,
      partial: false,
      items: { total: 4, complete: 4, failed: 0, cancelled: 0, unfinished: 0 },
    };
    return {
      a: batch,
      b: { ...batch, batchId: 'y' },
      matchedBy,
      unmatched: { onlyInA: [], onlyInB: [], onlyInACount: 0, onlyInBCount: 0 },
    };
  };

  it('finds the flipped verdict and the paired differences', () => {
    const a = side(['APPROVE', 'APPROVE', 'APPROVE', 'REJECT'], 8);
    const b = side(['APPROVE', 'REJECT', 'APPROVE', 'REJECT'], 6);
    const c = compareSides(a, b, meta(), { a: EMPTY, b: EMPTY }, { seed: 'x:y', resamples: 200 });
    expect(c).toMatchObject({ mode: 'jury', pairs: 4, completePairs: 4, outcome: 'the final verdict' });
    expect(c.flipped).toMatchObject({ count: 1, n: 4 });
    expect(c.flips).toHaveLength(1);
    expect(c.flips[0]).toMatchObject({
      outcomeA: 'APPROVE',
      outcomeB: 'REJECT',
      a: { index: 1 },
      b: { index: 1 },
    });
    const approve = c.differences.find((d) => d.measure === 'verdict share' && d.subject === 'APPROVE')!;
    expect(approve.a).toBe(0.75);
    expect(approve.b).toBe(0.5);
    expect(approve.difference.value).toBeCloseTo(-0.25, 12);
    expect(approve.difference.n).toBe(4);
    const score = c.differences.find((d) => d.measure === 'mean score' && d.subject === 'accuracy')!;
    expect(score.difference.value).toBe(-2);
    // Every pair moved by exactly −2: resampling shows no spread, and a zero-width interval would
    // claim certainty (issue 36), so there is none and the note says why.
    expect(score.difference.interval).toBeNull();
    expect(score.difference.note).toMatch(/every resample gave the same value/);
  });

  it('leaves pairs with a failed side out of the figures', () => {
    const a = side(['APPROVE', null, 'APPROVE']);
    const b = side(['REJECT', 'APPROVE', 'APPROVE']);
    const c = compareSides(a, b, meta(), { a: EMPTY, b: EMPTY }, { seed: 's' });
    expect(c.pairs).toBe(3);
    expect(c.completePairs).toBe(2);
    expect(c.flipped).toMatchObject({ count: 1, n: 2 });
  });
});

describe('chiSquareUpperTail', () => {
  it.each([
    [3.841458820694124, 1, 0.05],
    [5.991464547107979, 2, 0.05],
    [11.070497693516351, 5, 0.05],
    [6.634896601021214, 1, 0.01],
    [2, 2, Math.exp(-1)],
  ])('P(χ² ≥ %d; df %d) = %d', (x, df, p) => {
    expect(chiSquareUpperTail(x, df)).toBeCloseTo(p, 9);
  });

  it('is 1 at zero and falls with the statistic', () => {
    expect(chiSquareUpperTail(0, 3)).toBe(1);
    expect(chiSquareUpperTail(100, 3)).toBeLessThan(1e-15);
    expect(chiSquareUpperTail(1, 4)).toBeGreaterThan(chiSquareUpperTail(2, 4));
  });
});

describe('bootstrapMeans', () => {
  it('gives each column exactly what bootstrapMean gives it, sharing draws between equal lengths', () => {
    const columns = [
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      [3, 3, 4, 9, 1, 0, 2, 8, 8, 7],
      [5, NaN, 1, null, 2, 8],
      [],
      [4],
    ];
    const options = { seed: 'batch-id', resamples: 500 };
    expect(bootstrapMeans(columns, options)).toEqual(columns.map((c) => bootstrapMean(c, options)));
  });

  it('on differences equals the paired bootstrap of B against A', () => {
    const a = [0.2, 0.5, 0.9, 0.1, 0.4, 0.7];
    const b = [0.3, 0.4, 1.0, 0.5, 0.4, 0.9];
    const options = { seed: 's', resamples: 300 };
    const [estimate] = bootstrapMeans([b.map((y, i) => y - a[i])], options);
    expect(estimate).toEqual(pairedBootstrap(b, a, options));
  });
});

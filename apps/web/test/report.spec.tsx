/** @jest-environment jsdom */
import type {
  BatchComparison,
  BatchReport,
  BatchUsageSummary,
  ReportFigure,
  ReportModelUsage,
  ReportPositionBias,
  ReportRate,
} from '@conclave/contracts';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { ComparePage, CompareView } from '../src/compare';
import { ComparePicker } from '../src/compare-picker';
import type { ReactElement } from 'react';
import { IntervalChart, ReportPage, ReportView } from '../src/report';
import { sleep } from '../../../test/support/wait';

const HOSTILE = '<img src=x onerror="window.pwned=1">';

const fig = (value: number | null, lower?: number, upper?: number, n = 100): ReportFigure => ({
  value,
  n,
  interval:
    lower === undefined || upper === undefined
      ? null
      : { lower, upper, confidence: 0.95, method: 'percentile-bootstrap' },
  note: value === null ? 'fewer than two items' : null,
});

const rate = (count: number, n: number): ReportRate => ({
  count,
  n,
  value: n === 0 ? null : count / n,
  interval: n === 0 ? null : { lower: 0.1, upper: 0.9, confidence: 0.95, method: 'wilson-score' },
  note: null,
});

const link = (index: number) => ({
  index,
  key: null,
  messageId: `m-${index}`,
  webPath: `#/m/m-${index}`,
});

const usage: BatchUsageSummary = {
  items: 40,
  promptTokens: 12_000,
  completionTokens: 3_400,
  costUsd: 0.1234,
  costPerItemUsd: { n: 40, p50: 0.003, p95: 0.004, mean: 0.0031 },
  itemDurationMs: { n: 40, p50: 900, p95: 1500 },
  callLatencyMs: { n: 160, p50: 200, p95: 450 },
};

const modelUsage = (model: string): ReportModelUsage => ({
  model,
  calls: 40,
  failedCalls: rate(1, 40),
  parseFailures: rate(0, 39),
  promptTokens: 3000,
  completionTokens: 800,
  costUsd: 0.03,
  latencyMs: { n: 39, p50: 210, p95: 480 },
});

const verdicts = (a: number, rv: number, rj: number) => {
  const n = a + rv + rj;
  return {
    n,
    categories: [
      { category: 'APPROVE', count: a, share: a / n },
      { category: 'REVISE', count: rv, share: rv / n },
      { category: 'REJECT', count: rj, share: rj / n },
    ],
  };
};

const juryReport: BatchReport = {
  batchId: 'b-jury',
  name: 'Jury batch',
  status: 'complete',
  partial: false,
  generatedAt: '2026-11-24T11:00:00Z',
  modes: ['jury'],
  items: { total: 42, complete: 40, failed: 2, cancelled: 0, unfinished: 0 },
  // Issue 36 added the list of methods the report used.
  method: {
    confidence: 0.95,
    resamples: 2000,
    seed: 'b-jury',
    methods: [
      {
        name: 'percentile bootstrap over items',
        usedFor: ['mean score per item'],
        unit: 'item',
        confidence: 0.95,
        resamples: 2000,
        seed: 'b-jury',
        description: 'Items resampled with replacement.',
      },
      {
        name: 'Wilson score interval',
        usedFor: ['failed calls'],
        unit: 'call',
        confidence: 0.95,
        resamples: null,
        seed: null,
        description: HOSTILE,
      },
    ],
  },
  council: null,
  vote: null,
  debate: null,
  delphi: null,
  jury: {
    items: 40,
    assessments: { n: 120, allScoresRead: 119, someScoresRead: 120, verdictRead: 119 },
    verdicts: verdicts(20, 15, 5),
    jurorVerdicts: verdicts(60, 45, 15),
    dimensions: ['accuracy', 'clarity'].map((dimension, i) => ({
      dimension,
      scores: { n: 120, mean: 6.5 + i, standardDeviation: 1.2, min: 2, max: 10 },
      itemMean: fig(6.5 + i, 6.1 + i, 6.9 + i, 40),
      distribution: {
        n: 120,
        categories: [
          { category: '5', count: 30, share: 0.25 },
          { category: '7', count: 90, share: 0.75 },
        ],
      },
      alpha: {
        value: i === 0 ? 0.71 : 0.85,
        n: 40,
        pairableValues: 120,
        reading: i === 0 ? 'tentative' : 'reliable',
        interval: null,
        note: null,
      },
    })),
    jurors: [
      {
        juror: 'sim/lenient',
        items: 40,
        leniency: fig(0.8, 0.5, 1.1, 40),
        dimensions: [],
        verdicts: verdicts(30, 8, 2),
        parseFailures: rate(0, 40),
        scoresUnread: rate(0, 40),
        verdictUnread: rate(0, 40),
      },
      {
        juror: HOSTILE,
        items: 40,
        leniency: fig(-0.6, -0.9, -0.3, 40),
        dimensions: [],
        verdicts: verdicts(10, 20, 10),
        parseFailures: rate(1, 40),
        scoresUnread: rate(0, 40),
        verdictUnread: rate(1, 40),
      },
    ],
    fleissKappa: {
      value: 0.452,
      n: 40,
      ratersPerItem: { min: 3, max: 3 },
      observedAgreement: 0.7,
      expectedAgreement: 0.45,
      reading: 'moderate',
      interval: null,
      note: null,
    },
    mostDisagreement: [
      {
        ...link(7),
        verdictSplit: 0.667,
        scoreSpread: 5.5,
        verdicts: { APPROVE: 1, REVISE: 1, REJECT: 1 },
        finalVerdict: 'REVISE',
      },
      {
        ...link(3),
        key: 'doc-3',
        verdictSplit: 0.333,
        scoreSpread: 3,
        verdicts: { APPROVE: 2, REVISE: 1, REJECT: 0 },
        finalVerdict: 'APPROVE',
      },
    ],
    reference: {
      itemsWithReference: 30,
      itemsWithoutReference: 10,
      notCompared: {
        count: 0,
        failed: 0,
        cancelled: 0,
        unfinished: 0,
        noOutcome: 0,
        unusableReference: 0,
        items: [],
      },
      comparedWith: 'the final verdict',
      matching: rate(24, 30),
      cohen: {
        kappa: { ...fig(0.62, 0.4, 0.84, 30), interval: null },
        reading: 'substantial',
        observedAgreement: rate(24, 30),
        expectedAgreement: 0.47,
        categories: ['APPROVE', 'REVISE', 'REJECT'],
        confusion: [
          [12, 2, 0],
          [1, 8, 1],
          [0, 2, 4],
        ],
      },
      numeric: null,
      mismatches: [{ ...link(11), reference: 'REJECT', outcome: 'REVISE' }],
    },
  },
  models: [modelUsage('sim/lenient'), modelUsage(HOSTILE)],
  usage,
  failures: {
    failedItems: rate(2, 42),
    cancelledItems: 0,
    groups: [{ error: `provider said ${HOSTILE}`, count: 2, examples: [link(40), link(41)] }],
    otherFailedItems: 0,
  },
  notes: [],
};

const noBias: ReportPositionBias = {
  computable: false,
  explanation: 'Labels are shown in roster order: position and model cannot be told apart.',
  groups: [],
};

const contest = (model: string, wins: number, overlapsNext: boolean | null = null) => ({
  model,
  contests: 10,
  wins,
  winRate: rate(wins, 10),
  tiedFirst: 1,
  winsByTiebreak: 0,
  voteShare: rate(wins * 2, 30),
  overlapsNext,
});

const everyMode: BatchReport = {
  ...juryReport,
  batchId: 'b-all',
  modes: ['council', 'vote', 'debate', 'delphi'],
  jury: null,
  council: {
    items: 10,
    ballots: 30,
    unparsedRankings: rate(0, 30),
    models: [
      {
        model: 'sim/athena',
        itemsRanked: 10,
        ballots: 30,
        averageRank: fig(1.4, 1.2, 1.7, 10),
        firstPlaceShare: fig(0.6, 0.4, 0.8, 10),
        bordaPoints: 48,
        bordaPointsPerItem: fig(4.8, 4.2, 5.4, 10),
        overlapsNext: null,
        selfPreference: {
          n: 10,
          meanSelfRank: 1.2,
          meanOthersRank: 1.5,
          difference: fig(-0.3, -0.5, -0.1, 10),
        },
      },
    ],
    leaderboardNote: null,
    chairman: {
      itemsReached: 10,
      failures: rate(1, 10),
      byModel: [{ model: 'sim/chair', items: 10, failures: 1 }],
    },
    positionBias: {
      computable: true,
      explanation: 'Labels are shuffled per item.',
      groups: [
        {
          answersShown: 3,
          items: 10,
          validVotes: 30,
          positions: [1, 2, 3].map((position) => ({
            position,
            label: `Response ${'ABC'[position - 1]}`,
            votes: rate(10, 30),
            expectedShare: 1 / 3,
          })),
          test: {
            run: true,
            method: 'item-level permutation test',
            unit: 'item',
            items: 10,
            statistic: 0,
            degreesOfFreedom: 2,
            pValue: 1,
            holmAdjustedPValue: null,
            resamples: 1000,
            seed: 'b:positions:3',
          },
        },
      ],
    },
    reference: null,
  },
  vote: {
    items: 10,
    invalidVotes: rate(0, 30),
    // Issue 36: the two win-rate intervals overlap, and the leaderboard says so.
    models: [contest('sim/a', 6, true), contest('sim/b', 4)],
    leaderboardNote: '2 models ordered by win rate, not adjusted for multiple comparisons.',
    ties: { tied: rate(2, 10), brokenBy: [{ category: 'chairman', count: 2, share: 1 }] },
    positionBias: noBias,
    reference: null,
  },
  debate: {
    items: 10,
    invalidVotes: rate(0, 30),
    models: [contest('sim/d1', 7)],
    leaderboardNote: null,
    ties: { tied: rate(0, 10), brokenBy: [] },
    positionBias: noBias,
    reference: null,
    revisions: [
      {
        model: 'sim/d1',
        revisions: 10,
        revise: rate(5, 10),
        stand: rate(3, 10),
        merge: rate(2, 10),
        unparsed: rate(0, 10),
      },
    ],
    winnerDecision: { n: 10, categories: [{ category: 'revise', count: 6, share: 0.6 }] },
    winnerWasRevised: rate(6, 10),
  },
  delphi: {
    items: 10,
    numericItems: 10,
    qualitativeItems: 0,
    converged: rate(8, 10),
    roundsToConvergence: {
      n: 8,
      mean: 2.25,
      distribution: {
        n: 8,
        categories: [
          { category: '2', count: 6, share: 0.75 },
          { category: '3', count: 2, share: 0.25 },
        ],
      },
    },
    rounds: { n: 10, categories: [{ category: '3', count: 10, share: 1 }] },
    finalCv: { n: 10, p50: 0.05, p95: 0.2, mean: 0.08, distribution: { n: 10, categories: [] } },
    finalAgreement: { n: 0, p50: null, p95: null, mean: null, distribution: { n: 0, categories: [] } },
    movement: [
      {
        round: 2,
        n: 40,
        movedTowardMedian: rate(30, 40),
        movedAway: rate(4, 40),
        distanceClosed: fig(0.55, 0.45, 0.65, 40),
      },
    ],
    reference: {
      itemsWithReference: 12,
      itemsWithoutReference: 0,
      notCompared: {
        count: 2,
        failed: 2,
        cancelled: 0,
        unfinished: 0,
        noOutcome: 0,
        unusableReference: 0,
        items: [
          { ...link(4), reason: 'the item failed' },
          { ...link(9), reason: 'the item failed' },
        ],
      },
      comparedWith: 'the final value',
      matching: rate(0, 10),
      cohen: null,
      numeric: {
        meanAbsoluteError: fig(12.5, 8, 17, 10),
        medianAbsoluteError: { n: 10, p50: 10, p95: 30 },
        meanSignedError: fig(4, -2, 9, 10),
        meanAbsolutePercentageError: fig(8, 5, 12, 10),
        predictionIntervalCoverage: rate(9, 10),
        finalRangeCoverage: rate(7, 10),
      },
      mismatches: [],
    },
  },
};

const comparison: BatchComparison = {
  a: { batchId: 'b-a', name: 'Before', status: 'complete', partial: false, items: juryReport.items },
  b: { batchId: 'b-b', name: HOSTILE, status: 'complete', partial: false, items: juryReport.items },
  mode: 'jury',
  matchedBy: 'index',
  pairs: 42,
  completePairs: 40,
  unmatched: { onlyInA: [], onlyInB: [], onlyInACount: 0, onlyInBCount: 0 },
  outcome: 'final verdict',
  differences: [
    {
      measure: 'verdict share',
      subject: 'APPROVE',
      seat: null,
      a: 0.5,
      b: 0.475,
      difference: fig(-0.025, -0.075, 0, 40),
    },
    {
      measure: 'mean score',
      subject: 'accuracy',
      seat: null,
      a: 6.5,
      b: 6.9,
      difference: fig(0.4, 0.1, 0.7, 40),
    },
  ],
  flipped: rate(1, 40),
  flips: [
    {
      a: link(5),
      b: { ...link(5), messageId: 'mb-5', webPath: '#/m/mb-5' },
      outcomeA: 'APPROVE',
      outcomeB: 'REJECT',
      seatA: null,
      seatB: null,
    },
  ],
  // Issue 36: flips tested per outcome; a jury has no seats.
  flipTests: [],
  seats: [],
  usage: { a: usage, b: { ...usage, costUsd: 0.2 } },
  models: [{ model: 'sim/lenient', a: modelUsage('sim/lenient'), b: null }],
  method: { confidence: 0.95, resamples: 2000, seed: 'b-a:b-b', methods: [] },
  notes: ['Both batches used the same jury.'],
};

/** A vote comparison whose seat 2 changed model (issue 36). */
const seatComparison: BatchComparison = {
  ...comparison,
  mode: 'vote',
  outcome: 'the winner model',
  differences: [
    {
      measure: 'win rate',
      subject: 'seat 2: sim/vd:voteA → sim/vd',
      seat: 2,
      a: 0.6,
      b: 0.6,
      difference: fig(0, 0, 0, 5),
    },
  ],
  flipped: rate(1, 5),
  flips: [],
  flipTests: [
    {
      outcome: 'seat 1: sim/a',
      seat: 1,
      onlyA: 12,
      onlyB: 0,
      pValue: 0.000244140625,
      holmAdjustedPValue: 0.00048828125,
      method: 'exact McNemar (two-sided binomial test on the discordant pairs)',
      unit: 'item pair',
    },
    {
      outcome: 'seat 2: sim/vd:voteA → sim/vd',
      seat: 2,
      onlyA: 0,
      onlyB: 12,
      pValue: 0.000244140625,
      holmAdjustedPValue: 0.00048828125,
      method: 'exact McNemar (two-sided binomial test on the discordant pairs)',
      unit: 'item pair',
    },
  ],
  seats: [
    { seat: 1, a: ['sim/a'], b: ['sim/a'], changed: false },
    { seat: 2, a: ['sim/vd:voteA'], b: [HOSTILE], changed: true },
  ],
  method: {
    ...comparison.method,
    methods: [
      {
        name: 'exact McNemar test',
        usedFor: ['flips per outcome'],
        unit: 'item pair',
        confidence: null,
        resamples: null,
        seed: null,
        description: 'Binomial on the discordant pairs.',
      },
    ],
  },
};

type Answer = { status: number; body: unknown; text?: string };
let answers: Record<string, Answer>;
let fetchMock: jest.Mock;

beforeEach(() => {
  answers = { '/api/batches': { status: 200, body: [] } };
  fetchMock = jest.fn(async (url: string) => {
    const answer = answers[url] ?? { status: 500, body: { message: `no answer for ${url}` } };
    return {
      ok: answer.status < 400,
      status: answer.status,
      text: async () => answer.text ?? JSON.stringify(answer.body),
    };
  });
  global.fetch = fetchMock as unknown as typeof fetch;
});

/** Renders, then lets the fetches started on mount (the batch list) settle. */
async function show(ui: ReactElement) {
  const result = render(ui);
  await act(async () => sleep(0));
  return result;
}

const chart = (container: HTMLElement, name: RegExp) =>
  [...container.querySelectorAll('[role="img"]')].find((el) =>
    name.test(el.getAttribute('aria-label') ?? ''),
  );

describe('ReportView: a jury batch', () => {
  it('leads with the headline numbers', async () => {
    await show(<ReportView report={juryReport} />);
    const kpis = screen.getByRole('list', { name: 'headline numbers' });
    expect(kpis.textContent).toContain('40 / 42');
    expect(kpis.textContent).toContain('APPROVE');
    expect(kpis.textContent).toContain('0.452');
    expect(kpis.textContent).toContain('moderate');
  });

  it('says how many assessments had their scores and verdicts read, and how each part is used', async () => {
    await show(<ReportView report={juryReport} />);
    const jury = screen.getByRole('region', { name: 'jury' }).textContent;
    expect(jury).toContain(
      '120 juror assessments, all five scores read in 119, some scores in 120, the verdict in 119.',
    );
    expect(jury).toContain('Each part of an assessment is used where it was read');
    const head = screen.getByRole('table', { name: 'jurors' }).querySelector('thead')!.textContent;
    expect(head).toContain('verdict unread');
  });

  it('draws the intervals as whiskers in labelled SVG charts', async () => {
    const { container } = await show(<ReportView report={juryReport} />);
    for (const svg of container.querySelectorAll('svg')) {
      expect(svg.getAttribute('role')).toBe('img');
      expect(svg.getAttribute('aria-label')).toBeTruthy();
    }
    const dims = chart(container, /Mean score per dimension/)!;
    expect(dims.getAttribute('aria-label')).toContain('accuracy 6.5 (95% interval 6.1 to 6.9)');
    expect(dims.querySelectorAll('.whisker-line')).toHaveLength(2);
    expect(dims.querySelectorAll('circle.point')).toHaveLength(2);
    const leniency = chart(container, /Leniency per juror/)!;
    expect(leniency.querySelector('.reference-line')).toBeTruthy();
    expect(leniency.getAttribute('aria-label')).toContain('sim/lenient +0.8');
    // verdicts as bars
    expect(chart(container, /Final verdicts/)!.getAttribute('aria-label')).toContain('APPROVE 20');
  });

  it('gives agreement values with their reading', async () => {
    await show(<ReportView report={juryReport} />);
    const agreement = screen.getByRole('region', { name: 'agreement' });
    expect(agreement.textContent).toMatch(/Fleiss' κ on the jurors' verdicts0\.452 moderate/);
    expect(agreement.textContent).toMatch(/α, accuracy \(interval\)0\.710 tentative/);
    expect(agreement.textContent).toMatch(/α, clarity \(interval\)0\.850 reliable/);
    expect(agreement.textContent).toContain('Landis & Koch');
    expect(agreement.textContent).toContain('rely on α ≥ 0.800');
  });

  it('gives Fleiss’ κ and α their item-bootstrap intervals (issue 36)', async () => {
    const interval = (lower: number, upper: number) => ({
      lower,
      upper,
      confidence: 0.95,
      method: 'percentile-bootstrap' as const,
    });
    const jury = juryReport.jury!;
    await show(
      <ReportView
        report={{
          ...juryReport,
          jury: {
            ...jury,
            fleissKappa: { ...jury.fleissKappa, interval: interval(0.31, 0.58) },
            dimensions: jury.dimensions.map((d) => ({
              ...d,
              alpha: { ...d.alpha, interval: interval(0.62, 0.79) },
            })),
          },
        }}
      />,
    );
    const agreement = screen.getByRole('region', { name: 'agreement' });
    expect(agreement.textContent).toMatch(/verdicts0\.452 \[0\.310, 0\.580\] moderate/);
    expect(agreement.textContent).toMatch(/α, accuracy \(interval\)0\.710 \[0\.620, 0\.790\] tentative/);
  });

  it('links the items with the most disagreement, the mismatches and the failures to their deliberations', async () => {
    await show(<ReportView report={juryReport} />);
    const most = screen.getByRole('region', { name: 'most disagreement' });
    const links = within(most).getAllByRole('link');
    expect(links.map((l) => l.getAttribute('href'))).toEqual(['#/m/m-7', '#/m/m-3']);
    expect(links[1].textContent).toBe('Item 3 (doc-3)');
    expect(most.textContent).toContain('1 approve, 1 revise, 1 reject');
    const reference = screen.getByRole('region', { name: 'agreement with the reference' });
    expect(within(reference).getByRole('table').textContent).toContain('reference ↓ / panel →');
    expect(reference.textContent).toContain('0.620 substantial');
    expect(within(reference).getByRole('link').getAttribute('href')).toBe('#/m/m-11');
    const failures = screen.getByRole('region', { name: 'failures' });
    expect(
      within(failures)
        .getAllByRole('link')
        .map((l) => l.getAttribute('href')),
    ).toEqual(['#/m/m-40', '#/m/m-41']);
  });

  it('shows what the server sends as text, never as markup', async () => {
    const { container } = await show(<ReportView report={juryReport} />);
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toContain(HOSTILE);
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
  });

  it('says how its numbers were computed: method, unit, resamples and seed (issue 36)', async () => {
    const { container } = await show(<ReportView report={juryReport} />);
    const methods = screen.getByRole('table', { name: 'methods' });
    const rows = [...methods.querySelectorAll('tbody tr')].map((r) =>
      [...r.children].map((c) => c.textContent),
    );
    expect(rows[0]).toEqual([
      'percentile bootstrap over items',
      'mean score per item',
      'item',
      '2,000',
      'b-jury',
      'Items resampled with replacement.',
    ]);
    expect(rows[1].slice(0, 5)).toEqual(['Wilson score interval', 'failed calls', 'call', '—', '—']);
    expect(rows[1][5]).toBe(HOSTILE);
    expect(container.querySelector('img')).toBeNull();
  });

  it('puts wide tables in boxes that scroll sideways', async () => {
    const { container } = await show(<ReportView report={juryReport} />);
    const tables = [...container.querySelectorAll('table')];
    expect(tables.length).toBeGreaterThan(3);
    for (const table of tables) expect(table.parentElement?.className).toBe('table-scroll');
  });
});

describe('ReportView: every other mode', () => {
  it('renders council, vote, debate and Delphi with their charts', async () => {
    const { container } = await show(<ReportView report={everyMode} />);
    for (const name of ['council', 'vote', 'debate', 'delphi'])
      expect(screen.getByRole('region', { name })).toBeTruthy();
    expect(chart(container, /Average rank per model/)!.getAttribute('aria-label')).toContain(
      'sim/athena 1.4 (95% interval 1.2 to 1.7)',
    );
    expect(chart(container, /Share of valid votes by the position shown/)).toBeTruthy();
    // the position test names its method and its unit
    expect(screen.getByRole('region', { name: 'council' }).textContent).toContain(
      'p = 1.000 (against an even split; item-level permutation test, 1,000 relabellings).',
    );
    expect(screen.getByRole('region', { name: 'vote' }).textContent).toContain(noBias.explanation);
    expect(chart(container, /Win rate per model/)!.querySelectorAll('circle.point')).toHaveLength(2);
    expect(screen.getByRole('table', { name: 'revision decisions per model' })).toBeTruthy();
    expect(chart(container, /moved toward the previous round's median/)).toBeTruthy();
    // Issue 36 (an intended change): the percentage error is in percent, coverage is of the
    // prediction interval (no longer "the reported 95% interval", the mean's), and the items with a
    // reference that were not compared are counted and named.
    const delphi = screen.getByRole('region', { name: 'delphi' }).textContent;
    expect(delphi).toContain('Reference inside the 95% prediction interval of the final estimates');
    expect(delphi).not.toContain('reported 95% interval');
    expect(delphi).toMatch(/Mean absolute percentage error8\.0%/);
    expect(delphi).toContain('12 items carry a reference (0 do not), counted over all the mode');
    expect(delphi).toContain('Not compared: 2 items with a reference (2 failed)');
  });
});

describe('ReportView: leaderboards (issue 36)', () => {
  it('says when neighbours’ intervals overlap, with the multiple-comparison note', async () => {
    await show(<ReportView report={everyMode} />);
    const rows = [...screen.getByRole('table', { name: 'vote models' }).querySelectorAll('tbody tr')];
    expect(rows.map((r) => r.lastElementChild?.textContent)).toEqual(['not distinguishable at 95 %', '—']);
    const vote = screen.getByRole('region', { name: 'vote' });
    expect(vote.textContent).toContain('not adjusted for multiple comparisons');
  });

  it('gives Borda points per item with their interval', async () => {
    await show(<ReportView report={everyMode} />);
    const council = screen.getByRole('table', { name: 'council models' });
    expect(council.textContent).toContain('48 (per item 4.8 [4.2 to 5.4])');
  });
});

describe('IntervalChart', () => {
  it('puts the point between the ends of its whisker', () => {
    const { container } = render(
      <IntervalChart
        title="t"
        rows={[{ key: 'x', label: 'x', value: 0.5, lower: 0.2, upper: 0.9 }]}
        format={String}
        min={0}
        max={1}
      />,
    );
    const d = container.querySelector('.whisker-line')!.getAttribute('d')!;
    const [left, right] = [...d.matchAll(/M([\d.]+),/g)].map((m) => Number(m[1]));
    const cx = Number(container.querySelector('circle.point')!.getAttribute('cx'));
    expect(left).toBeLessThan(cx);
    expect(cx).toBeLessThan(Number(/H([\d.]+)/.exec(d)![1]));
    expect(right).toBe(left);
  });

  it('says plainly when a value could not be computed', () => {
    const { container } = render(
      <IntervalChart
        title="t"
        rows={[{ key: 'x', label: 'x', value: null, lower: null, upper: null }]}
        format={String}
      />,
    );
    expect(container.querySelector('svg')!.getAttribute('aria-label')).toBe('t: x not computed');
    expect(container.querySelector('circle')).toBeNull();
  });
});

describe('ReportPage', () => {
  it('loads the report and copies its Markdown', async () => {
    answers['/api/batches/b-jury/report'] = { status: 200, body: juryReport };
    answers['/api/batches/b-jury/report?format=md'] = { status: 200, body: null, text: '# Report\n\n| a |' };
    const writeText = jest.fn(async () => undefined);
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    render(<ReportPage batchId="b-jury" />);
    expect(screen.getByRole('status').textContent).toContain('Computing the report');
    await screen.findByRole('heading', { name: /Report: Jury batch/ });
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Copy Markdown' })));
    await waitFor(() => expect(writeText).toHaveBeenCalledWith('# Report\n\n| a |'));
    expect(screen.getByText('Markdown copied.')).toBeTruthy();
  });

  it('shows the Markdown to copy by hand when there is no clipboard, and downloads it', async () => {
    answers['/api/batches/b-jury/report'] = { status: 200, body: juryReport };
    answers['/api/batches/b-jury/report?format=md'] = { status: 200, body: null, text: '# Report' };
    Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true });
    const created: Blob[] = [];
    URL.createObjectURL = jest.fn((blob: Blob) => (created.push(blob), 'blob:report'));
    URL.revokeObjectURL = jest.fn();
    const click = jest.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (
      this: HTMLAnchorElement,
    ) {
      expect(this.download).toBe('report-b-jury.md');
      expect(this.href).toBe('blob:report');
    });
    render(<ReportPage batchId="b-jury" />);
    await screen.findByRole('heading', { name: /Report: Jury batch/ });
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Copy Markdown' })));
    await waitFor(() =>
      expect(
        (screen.getByRole('textbox', { name: 'the report as Markdown' }) as HTMLTextAreaElement).value,
      ).toBe('# Report'),
    );
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Download Markdown' })));
    await waitFor(() => expect(click).toHaveBeenCalledTimes(1));
    const saved = await new Promise<string>((resolve) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result));
      reader.readAsText(created[0]);
    });
    expect(saved).toBe('# Report');
    click.mockRestore();
  });

  it('says when the batch does not exist', async () => {
    answers['/api/batches/nope/report'] = {
      status: 404,
      body: { statusCode: 404, message: 'Batch not found' },
    };
    render(<ReportPage batchId="nope" />);
    expect((await screen.findByRole('alert')).textContent).toContain('Batch not found');
  });

  it('offers the other batches to compare with', async () => {
    answers['/api/batches'] = {
      status: 200,
      body: [
        { batchId: 'b-jury', name: 'Jury batch', total: 42, status: 'complete' },
        { batchId: 'b-other', name: 'Other', total: 42, status: 'complete' },
      ],
    };
    render(<ComparePicker batchId="b-jury" />);
    const select = (await screen.findByRole('combobox', { name: 'Compare with' })) as HTMLSelectElement;
    expect([...select.options].map((o) => o.value)).toEqual(['b-other']);
    fireEvent.submit(screen.getByRole('form', { name: 'compare with another batch' }));
    expect(location.hash).toBe('#/compare?a=b-jury&b=b-other');
  });
});

describe('Compare', () => {
  it('shows the batches side by side, the differences with intervals and the flipped items', async () => {
    const { container } = await show(<CompareView comparison={comparison} />);
    expect([...container.querySelectorAll('.compared-batch h3')].map((h) => h.textContent)).toEqual([
      'A: Before complete',
      `B: ${HOSTILE} complete`,
    ]);
    expect(container.querySelector('img')).toBeNull();
    const share = chart(container, /verdict share: B − A/)!;
    expect(share.getAttribute('aria-label')).toContain('APPROVE −2.5 pts (95% interval −7.5 pts to 0 pts)');
    expect(share.querySelector('.reference-line')).toBeTruthy();
    expect(chart(container, /mean score: B − A/)!.getAttribute('aria-label')).toContain('accuracy +0.4');
    const flips = screen.getByRole('region', { name: 'flipped items' });
    expect(flips.textContent).toContain('APPROVE → B REJECT');
    expect(
      within(flips)
        .getAllByRole('link')
        .map((l) => l.getAttribute('href')),
    ).toEqual(['#/m/m-5', '#/m/mb-5']);
    expect(screen.getByRole('table', { name: 'models in A and B' }).textContent).toContain('40 / —');
  });

  it('names a seat that changed model, tests the flips per outcome and says how (issue 36)', async () => {
    const { container } = await show(<CompareView comparison={seatComparison} />);
    const seats = screen.getByRole('region', { name: 'changed seats' });
    expect(seats.textContent).toContain(`Seat 2: sim/vd:voteA → ${HOSTILE}`);
    expect(seats.textContent).not.toContain('Seat 1');
    expect(container.querySelector('img')).toBeNull();
    const tests = screen.getByRole('table', { name: 'change per outcome' });
    expect(tests.textContent).toContain('Holm-adjusted');
    expect(tests.textContent).toContain('seat 2: sim/vd:voteA → sim/vd');
    expect(tests.textContent).toContain('2.4e-4');
    expect(tests.textContent).toContain('4.9e-4');
    const methods = screen.getByRole('region', { name: 'how these numbers were computed' });
    expect(methods.textContent).toContain('exact McNemar test');
    expect(methods.textContent).toContain('item pair');
  });

  it('names the problem when the batches cannot be compared', async () => {
    answers['/api/batches/compare?a=x&b=y'] = {
      status: 400,
      body: { statusCode: 400, error: 'Bad Request', message: 'Batch A is jury and batch B is vote' },
    };
    render(<ComparePage a="x" b="y" />);
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('These batches cannot be compared');
    expect(alert.textContent).toContain('Batch A is jury and batch B is vote');
  });

  it('asks for two batches', () => {
    render(<ComparePage a="x" b="" />);
    expect(screen.getByRole('alert').textContent).toContain('Two batches are needed');
    expect(fetchMock).not.toHaveBeenCalled();
  });
});

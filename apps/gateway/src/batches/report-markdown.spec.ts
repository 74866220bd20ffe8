import {
  BatchReportBuilder,
  ComparisonSide,
  compareSides,
  rate,
  type ReportAggregates,
} from '@conclave/analysis';
import { checkAnnotations, itemsFromCsv, parseBatch, splitAnnotations } from './batch-input';
import { escapeMarkdown } from '@conclave/outcomes';
import { comparisonMarkdown, reportMarkdown } from './report-markdown';

const EVIL =
  'sim/x|y\n# Heading [click](https://evil.example) <img src=x> ![i](x) `code` **b** www.evil.example';

const AGGREGATES: ReportAggregates = {
  calls: [
    {
      model: EVIL,
      calls: 4,
      failed: 1,
      promptTokens: 10,
      completionTokens: 20,
      costUsd: 0,
      okCalls: 3,
      latencyP50: 12,
      latencyP95: 30,
    },
  ],
  stageCalls: [],
  usage: {
    items: 2,
    promptTokens: 10,
    completionTokens: 20,
    costUsd: 0,
    costMean: 0,
    costP50: 0,
    costP95: 0,
    durationItems: 2,
    durationP50: 100,
    durationP95: 150,
    okCalls: 3,
    latencyP50: 12,
    latencyP95: 30,
  },
  failures: [
    { error: `provider said: ${EVIL}`, count: 1, examples: [{ index: 1, messageId: 'm-1', key: 'k|1' }] },
  ],
};

const rows = (verdict: string) => [
  {
    stageType: 'deliberation',
    model: EVIL,
    participant: 1,
    data: { scores: { accuracy: 8 }, verdict, parseSuccess: true },
  },
  {
    stageType: 'deliberation',
    model: 'sim/j2',
    participant: 2,
    data: { scores: { accuracy: 4 }, verdict: 'REJECT', parseSuccess: true },
  },
  { stageType: 'verdict', model: 'sim/f', participant: null, data: { finalVerdict: verdict } },
];

function report() {
  const builder = new BatchReportBuilder({ seed: 'b' });
  builder.addItem(
    { index: 0, messageId: 'm-0', mode: 'jury', status: 'complete', reference: 'APPROVE', key: 'k[0]' },
    rows('APPROVE'),
  );
  builder.addItem(
    { index: 1, messageId: 'm-1', mode: 'jury', status: 'failed', reference: null, key: 'k|1' },
    [],
  );
  return builder.result(
    {
      batchId: 'b',
      name: `name | with\nnewline`,
      status: 'complete',
      generatedAt: '2026-01-01T00:00:00.000Z',
    },
    AGGREGATES,
  );
}

/** Every table row must have as many unescaped pipes as its header. */
function checkTables(markdown: string): void {
  const lines = markdown.split('\n');
  const pipes = (line: string) => (line.replace(/\\\\/g, '').match(/(?<!\\)\|/g) ?? []).length;
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('| ') || !lines[i + 1]?.startsWith('| ---')) continue;
    const expected = pipes(lines[i]);
    for (let j = i + 1; j < lines.length && lines[j].startsWith('|'); j++)
      expect(pipes(lines[j])).toBe(expected);
  }
}

describe('report Markdown', () => {
  it('escapes model and user text: no cell, line, link, image or HTML can be injected', () => {
    const escaped = escapeMarkdown(EVIL);
    expect(escaped).not.toMatch(/\n/);
    expect(escaped).not.toMatch(/(?<!\\)[|[\]<>`*]/);
    expect(escaped).not.toContain('https://');
    expect(escaped).not.toMatch(/www\.evil/);
    expect(escapeMarkdown('a\r\nb\u2028c\u0000d')).toBe('a b cd');
    // Bidi overrides and zero-width characters cannot disguise a cell either.
    expect(escapeMarkdown('ok\u202egnp.exe\u200b')).toBe('okgnp.exe');
  });

  it('has the sections of a jury report, with links and escaped text', () => {
    const markdown = reportMarkdown(report());
    for (const heading of [
      '# Batch report: ',
      '## Jury',
      '### Dimensions',
      '### Jurors',
      '### Most disagreement',
      '### Agreement with the reference',
      '## Models',
      '## Usage',
      '## Failures',
      '## Notes',
    ]) {
      expect(markdown).toContain(heading);
    }
    expect(markdown).toContain('name \\| with newline');
    expect(markdown).toContain('[item 0 (key k\\[0\\])](#/m/m-0)');
    expect(markdown).toContain('[item 1 (key k\\|1)](#/m/m-1)');
    expect(markdown).not.toContain('https://evil');
    expect(markdown).not.toMatch(/(?<!\\)<img/);
    expect(markdown).not.toMatch(/^# Heading/m);
    checkTables(markdown);
  });

  it('renders a comparison with its flips and usage side by side', () => {
    const side = (verdict: string) => {
      const s = new ComparisonSide('jury', 1);
      s.add(
        0,
        { index: 0, messageId: `m-${verdict}`, mode: 'jury', status: 'complete', reference: null, key: EVIL },
        rows(verdict),
      );
      return s;
    };
    const batch = {
      batchId: 'a',
      name: EVIL,
      status: 'complete' as const,
      partial: false,
      items: { total: 1, complete: 1, failed: 0, cancelled: 0, unfinished: 0 },
    };
    const comparison = compareSides(
      side('APPROVE'),
      side('REJECT'),
      {
        a: batch,
        b: { ...batch, batchId: 'b' },
        matchedBy: 'key',
        unmatched: { onlyInA: [EVIL], onlyInB: [], onlyInACount: 1, onlyInBCount: 0 },
      },
      { a: AGGREGATES, b: AGGREGATES },
      { seed: 'a:b' },
    );
    const markdown = comparisonMarkdown(comparison);
    for (const heading of [
      '# Batch comparison (jury)',
      '## Differences',
      '## Flipped outcomes',
      '## Usage',
      '### Per model',
    ]) {
      expect(markdown).toContain(heading);
    }
    expect(markdown).toContain('| APPROVE | REJECT |');
    expect(markdown).not.toContain('https://evil');
    checkTables(markdown);
  });

  it('names a seat whose model changed, tests flips per outcome and says how the numbers were computed', () => {
    // Issue 36: seat 2 holds EVIL in A and sim/b in B; it wins the item on both sides.
    const side = (second: string) => {
      const s = new ComparisonSide('vote', 1);
      const roster = ['sim/a', second];
      s.add(0, { index: 0, messageId: 'm-0', mode: 'vote', status: 'complete', reference: null, key: null }, [
        ...roster.map((model, i) => ({ stageType: 'initial_answer', model, participant: i, data: {} })),
        {
          stageType: 'vote_label_map',
          model: null,
          participant: null,
          data: { 'Response A': 'sim/a', 'Response B': second },
        },
        {
          stageType: 'vote_winner',
          model: second,
          participant: 1,
          data: { winnerLabel: 'Response B', winnerModel: second },
        },
      ]);
      return s;
    };
    const batch = {
      batchId: 'a',
      name: null,
      status: 'complete' as const,
      partial: false,
      items: { total: 1, complete: 1, failed: 0, cancelled: 0, unfinished: 0 },
    };
    const comparison = compareSides(
      side(EVIL),
      side('sim/b'),
      {
        a: batch,
        b: { ...batch, batchId: 'b' },
        matchedBy: 'index',
        unmatched: { onlyInA: [], onlyInB: [], onlyInACount: 0, onlyInBCount: 0 },
      },
      { a: AGGREGATES, b: AGGREGATES },
      { seed: 'a:b' },
    );
    expect(comparison.flipped).toMatchObject({ count: 0, n: 1 });
    const markdown = comparisonMarkdown(comparison);
    for (const heading of ['## Seats', '### Change per outcome', '## How these numbers were computed']) {
      expect(markdown).toContain(heading);
    }
    expect(markdown).toContain(`| 2 | ${escapeMarkdown(EVIL)} | sim/b |`);
    expect(markdown).toContain('exact McNemar test');
    // One outcome (seat 2 winning) occurred: one test, so no Holm adjustment.
    expect(markdown).toContain('| seat 2: ');
    expect(markdown).not.toContain('Holm');
    expect(markdown).not.toContain('https://evil');
    checkTables(markdown);

    const report = new BatchReportBuilder({ seed: 'b', resamples: 50 });
    report.addItem(
      { index: 0, messageId: 'm-0', mode: 'jury', status: 'complete', reference: null, key: null },
      [...rows('APPROVE')],
    );
    const text = reportMarkdown(
      report.result({ batchId: 'b', name: null, status: 'complete', generatedAt: 'now' }, AGGREGATES),
    );
    expect(text).toContain('## How these numbers were computed');
    expect(text).toMatch(/\| Wilson score interval \| failed calls \| call \| — \| — \|/);
    checkTables(text);
  });
});

describe('report Markdown, issue 36 figures', () => {
  const meta = {
    batchId: 'd',
    name: null,
    status: 'complete' as const,
    generatedAt: '2026-01-01T00:00:00.000Z',
  };
  const estimate = (p: number, value: number) => ({
    stageType: 'round_1',
    model: `sim/p${p}`,
    participant: p,
    data: { round: 1, type: 'numeric', estimate: value },
  });
  const delphiRows = (values: number[]) => [
    { stageType: 'classify', model: 'sim/f', participant: null, data: { type: 'numeric' } },
    ...values.map((v, p) => estimate(p, v)),
    {
      stageType: 'round_1_stats',
      model: null,
      participant: null,
      data: { median: 1, mean: 1, cv: 0, converged: true },
    },
    {
      stageType: 'synthesis',
      model: 'sim/f',
      participant: null,
      data: { finalValue: values.reduce((a, b) => a + b) / values.length },
    },
  ];

  it('Delphi: the percentage error in percent, the prediction-interval coverage, items not compared named', () => {
    const builder = new BatchReportBuilder({ seed: 'd' });
    const item = (index: number, reference: number | string | null, status: 'complete' | 'failed') => ({
      index,
      messageId: `m-${index}`,
      mode: 'delphi' as const,
      status,
      reference,
      key: null,
    });
    // Final value 150 against 100: 50 % off; 100 against 100: 0 %.
    builder.addItem(item(0, 100, 'complete'), delphiRows([100, 200]));
    builder.addItem(item(1, 100, 'complete'), delphiRows([100, 100]));
    builder.addItem(item(2, 'lots', 'complete'), delphiRows([5, 5]));
    builder.addItem(item(3, 7, 'failed'), []);
    const markdown = reportMarkdown(builder.result(meta, AGGREGATES));
    expect(markdown).toContain('- Mean absolute percentage error: 25.0 % [');
    expect(markdown).toContain('Items with a reference: 4 (without: 0), counted over all the mode');
    expect(markdown).toContain(
      'Not compared: 2 items with a reference (1 failed, 1 with a reference that cannot be compared): ' +
        '[item 2](#/m/m-2) (the reference cannot be compared with this outcome), [item 3](#/m/m-3) (the item failed).',
    );
    expect(markdown).toContain('95 % prediction interval of the final estimates');
    expect(markdown).not.toContain('reported 95 % interval');
    expect(markdown).toContain(
      '1 delphi item failed or was cancelled and is not in the delphi statistics: item 3.',
    );
    checkTables(markdown);
  });

  it('jury: how many assessments had their scores and verdicts read, and how each part is used', () => {
    const builder = new BatchReportBuilder({ seed: 'j' });
    builder.addItem(
      { index: 0, messageId: 'm-0', mode: 'jury', status: 'complete', reference: null, key: null },
      [
        ...rows('APPROVE').slice(0, 1),
        {
          stageType: 'deliberation',
          model: 'sim/j3',
          participant: 3,
          data: { scores: { accuracy: 3 }, verdict: null, parseSuccess: false },
        },
      ],
    );
    const markdown = reportMarkdown(builder.result(meta, AGGREGATES));
    expect(markdown).toContain(
      '1 complete items; 2 juror assessments, all five scores read in 0, some scores in 2, the verdict in 1.',
    );
    expect(markdown).toContain('Each part of an assessment is used where it was read');
    expect(markdown).toContain(
      '| Juror | Leniency (95 % CI) | Verdicts | Parse failures | Scores unread | Verdict unread |',
    );
    checkTables(markdown);
  });
});

describe('reference and key of batch items', () => {
  const jury = { mode: 'jury', config: {} };
  const vote = { mode: 'vote', config: { models: ['sim/a', 'sim/b'] } };
  const delphi = { mode: 'delphi', config: { questionType: null } };

  it('come off the item before it is validated as a request', () => {
    expect(splitAnnotations({ question: 'q', reference: 'APPROVE', key: 'k', mode: 'jury' })).toEqual({
      request: { question: 'q', mode: 'jury' },
      annotations: { reference: 'APPROVE', key: 'k' },
    });
    expect(splitAnnotations({ question: 'q', reference: null })).toEqual({
      request: { question: 'q' },
      annotations: {},
    });
  });

  it('are read from CSV columns, and refused in defaults', () => {
    expect(itemsFromCsv('question,content,reference,key\nq,c,approve,item-1\nr,d,,\n')).toEqual({
      items: [
        { question: 'q', modeConfig: { content: 'c' }, reference: 'approve', key: 'item-1' },
        { question: 'r', modeConfig: { content: 'd' } },
      ],
    });
    const parsed = parseBatch({ items: [{ question: 'q' }], defaults: { reference: 'APPROVE', key: 'k' } });
    expect(parsed).toEqual({
      ok: false,
      fields: {
        'defaults.reference': 'each item has its own reference',
        'defaults.key': 'each item has its own key',
      },
    });
  });

  it('check the reference against the mode', () => {
    const keys = new Map<string, number>();
    expect(checkAnnotations({ reference: ' revise ' }, jury, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 'REVISE' },
    });
    expect(checkAnnotations({ reference: 'maybe' }, jury, keys, 0)).toMatchObject({
      ok: false,
      fields: { reference: expect.stringMatching(/APPROVE, REVISE or REJECT/) },
    });
    expect(checkAnnotations({ reference: 'sim/b' }, vote, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 'sim/b' },
    });
    expect(checkAnnotations({ reference: 'sim/z' }, vote, keys, 0)).toMatchObject({
      ok: false,
      fields: { reference: expect.stringMatching(/sim\/a, sim\/b/) },
    });
    expect(checkAnnotations({ reference: '42.5' }, delphi, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 42.5 },
    });
    expect(checkAnnotations({ reference: 7 }, delphi, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 7 },
    });
    // Issue 36 (an intended change, not a weakening): a text reference needs a question with text
    // answers. Before, 'Yes' on a question of unstated type was accepted, and "lots" on a numeric
    // question was silently counted as "without reference"; now both are refused unless the item
    // says its answers are text (questionType "qualitative" or options).
    const qualitative = { mode: 'delphi', config: { questionType: 'qualitative' } };
    const withOptions = { mode: 'delphi', config: { questionType: null, options: ['Yes', 'No'] } };
    const numeric = { mode: 'delphi', config: { questionType: 'numeric' } };
    expect(checkAnnotations({ reference: 'Yes' }, qualitative, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 'Yes' },
    });
    expect(checkAnnotations({ reference: 'Yes' }, withOptions, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 'Yes' },
    });
    expect(checkAnnotations({ reference: '12' }, qualitative, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: '12' },
    });
    expect(checkAnnotations({ reference: 'lots' }, numeric, keys, 0)).toMatchObject({
      ok: false,
      fields: { reference: expect.stringMatching(/numeric Delphi question.*number/) },
    });
    expect(checkAnnotations({ reference: 'lots' }, delphi, keys, 0)).toMatchObject({
      ok: false,
      fields: { reference: expect.stringMatching(/not a number.*qualitative/) },
    });
    expect(checkAnnotations({ reference: 'Yes' }, delphi, keys, 0)).toMatchObject({ ok: false });
    expect(checkAnnotations({ reference: ' 1e3 ' }, numeric, keys, 0)).toEqual({
      ok: true,
      annotations: { reference: 1000 },
    });
    expect(checkAnnotations({ reference: 'x'.repeat(501) }, delphi, keys, 0)).toMatchObject({
      ok: false,
      fields: { reference: expect.stringMatching(/at most 500/) },
    });
    expect(checkAnnotations({ reference: { v: 1 } }, delphi, keys, 0)).toMatchObject({ ok: false });
  });

  it('keep keys unique within a batch', () => {
    const keys = new Map<string, number>();
    expect(checkAnnotations({ key: 'a' }, jury, keys, 0)).toEqual({ ok: true, annotations: { key: 'a' } });
    expect(checkAnnotations({ key: 3 }, jury, keys, 1)).toEqual({ ok: true, annotations: { key: '3' } });
    expect(checkAnnotations({ key: ' a ' }, jury, keys, 2)).toEqual({
      ok: false,
      fields: { key: `key "a" is already item 0's: keys must be unique in a batch` },
    });
    expect(checkAnnotations({ key: '' }, jury, keys, 3)).toMatchObject({
      ok: false,
      fields: { key: 'key must not be empty' },
    });
    expect(checkAnnotations({ key: 'a\u0000' }, jury, keys, 3)).toMatchObject({ ok: false });
    expect(checkAnnotations({ key: ['x'] }, jury, keys, 3)).toMatchObject({ ok: false });
  });
});

describe('report Markdown: position bias', () => {
  it('names the test, its unit and its p-values, and says when and why a group was not tested', () => {
    const positions = (k: number) =>
      Array.from({ length: k }, (_, i) => ({
        position: i + 1,
        label: `Response ${'ABCD'[i]}`,
        votes: rate(i === 0 ? 10 : 5, 10 + 5 * (k - 1)),
        expectedShare: 1 / k,
      }));
    const base = report();
    const markdown = reportMarkdown({
      ...base,
      vote: {
        items: 14,
        invalidVotes: rate(0, 30),
        models: [],
        leaderboardNote: 'Two models, not adjusted for multiple comparisons.',
        ties: { tied: rate(0, 14), brokenBy: [] },
        positionBias: {
          computable: true,
          explanation: 'Vote shuffles the labels.',
          groups: [
            {
              answersShown: 3,
              items: 12,
              validVotes: 20,
              positions: positions(3),
              test: {
                run: true,
                method: 'item-level permutation test',
                unit: 'item',
                items: 12,
                statistic: 2.5,
                degreesOfFreedom: 2,
                pValue: 0.0412,
                holmAdjustedPValue: 0.0824,
                resamples: 1000,
                seed: 'b:positions:3',
              },
            },
            {
              answersShown: 4,
              items: 2,
              validVotes: 6,
              positions: positions(4),
              test: {
                run: false,
                items: 2,
                reason: 'fewer than 10 items with a valid vote (2): too few to test',
              },
            },
          ],
        },
        reference: null,
      },
    });
    expect(markdown).toContain(
      '3 answers shown, 12 items, 20 valid votes; χ² = 2.50 (df = 2), p = 0.0412, Holm-adjusted p = 0.0824 (item-level permutation test over 12 items, 1000 relabellings)',
    );
    expect(markdown).toContain(
      '4 answers shown, 2 items, 6 valid votes; not tested: fewer than 10 items with a valid vote \\(2\\): too few to test',
    );
    expect(markdown).toContain('Two models, not adjusted for multiple comparisons.');
  });

  it('says when leaderboard neighbours’ intervals overlap (issue 36)', () => {
    const model = (name: string, wins: number, overlapsNext: boolean | null) => ({
      model: name,
      contests: 10,
      wins,
      winRate: rate(wins, 10),
      tiedFirst: 0,
      winsByTiebreak: 0,
      voteShare: rate(wins, 10),
      overlapsNext,
    });
    const markdown = reportMarkdown({
      ...report(),
      vote: {
        items: 10,
        invalidVotes: rate(0, 30),
        models: [model('sim/a', 5, true), model('sim/b', 4, false), model('sim/c', 1, null)],
        leaderboardNote: null,
        ties: { tied: rate(0, 10), brokenBy: [] },
        positionBias: { computable: false, explanation: 'x', groups: [] },
        reference: null,
      },
    });
    expect(markdown).toMatch(/\| sim\/a \|.*\| not distinguishable at 95 % \|\n/);
    expect(markdown).toMatch(/\| sim\/b \|.*\| intervals apart \|\n/);
    expect(markdown).toMatch(/\| sim\/c \|.*\| — \|\n/);
  });
});

describe('report Markdown, panel gain (issue 37)', () => {
  const graded = (verdict: string) => ({ grade: { verdict, grader: 'exact' } });
  const councilRows = (verdicts: string[], panel: string) => [
    ...verdicts.map((v, i) => ({
      stageType: 'stage1',
      model: i === 0 ? EVIL : `sim/m${i + 1}`,
      participant: null,
      data: graded(v),
    })),
    {
      stageType: 'stage2_label_map',
      model: null,
      participant: null,
      data: { 'Response A': EVIL, 'Response B': 'sim/m2', 'Response C': 'sim/m3' },
    },
    { stageType: 'stage3', model: 'sim/chair', participant: null, data: graded(panel) },
  ];

  it('a graded council batch has a Panel gain section with its sentences, tables and methods, names escaped', () => {
    const builder = new BatchReportBuilder({ seed: 'g', resamples: 100 });
    const plan: [string[], string][] = [
      [['correct', 'correct', 'incorrect'], 'correct'],
      [['incorrect', 'correct', 'correct'], 'correct'],
      [['correct', 'incorrect', 'incorrect'], 'incorrect'],
      [['incorrect', 'incorrect', 'correct'], 'correct'],
      [['correct', 'unreadable', 'correct'], 'correct'],
      [['incorrect', 'incorrect', 'incorrect'], 'incorrect'],
    ];
    plan.forEach(([members, panel], index) =>
      builder.addItem(
        {
          index,
          messageId: `m-${index}`,
          mode: 'council',
          status: 'complete',
          reference: null,
          key: null,
          expected: '1',
        },
        councilRows(members, panel),
      ),
    );
    const report = builder.result(
      { batchId: 'g', name: null, status: 'complete', generatedAt: '2026-01-01T00:00:00.000Z' },
      AGGREGATES,
    );
    const markdown = reportMarkdown(report);
    expect(markdown).toContain('## Panel gain: council');
    // The panel was right on 4 of 6, seat 1 (the best, ties to the lowest seat) on 3 of 6.
    expect(markdown).toContain('The panel was right on 66.7 % of items \\(4 of 6\\)');
    expect(markdown).toContain('| **Panel (final answer)** | 66.7 % [30.0 %, 90.3 %] | 4/6 | 0 | 0 |');
    expect(markdown).toContain('| Seat 2: sim/m2 | 33.3 % [9.7 %, 70.0 %] | 2/6 | 1 | 0 |');
    expect(markdown).toContain('Majority of the members’ own answers');
    expect(markdown).toContain(
      '| Tango score interval for a paired difference | panel gain \\(council\\): panel − best member',
    );
    expect(markdown).not.toContain('https://evil');
    expect(markdown).not.toMatch(/(?<!\\)<img/);
    checkTables(markdown);
  });

  it('an ungraded batch has no Panel gain section', () => {
    expect(reportMarkdown(report())).not.toContain('Panel gain');
  });
});

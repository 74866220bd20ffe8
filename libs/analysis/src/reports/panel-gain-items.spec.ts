import type { GainVerdict, MessageStatus, ModeName, ReportAggregates } from '@conclave/contracts';
import { BatchReportBuilder } from './batch-report';
import { panelGain } from './panel-gain';
import { panelGainSentences } from './panel-gain-text';
import { councilSeats, numericExpected, panelGainItem, withAllSeats } from './panel-gain-items';
import type { ReportItem, ReportStageRow } from './rows';

const item = (mode: ModeName, index: number, extra: Partial<ReportItem> = {}): ReportItem => ({
  index,
  messageId: `00000000-0000-4000-8000-${String(index + 1).padStart(12, '0')}`,
  mode,
  status: 'complete' as MessageStatus,
  reference: null,
  key: null,
  ...extra,
});

const graded = (verdict: GainVerdict, data: Record<string, unknown> = {}) => ({
  ...data,
  grade: { verdict, grader: 'numeric' },
});

const row = (
  stageType: string,
  model: string | null,
  data: Record<string, unknown> | null,
  participant: number | null = null,
): ReportStageRow => ({ stageType, model, participant, data });

const LABELS = { 'Response A': 'sim/a', 'Response B': 'sim/b', 'Response C': 'sim/c' };

/** A council item: stage-1 rows in completion order (not roster order), a label map, a synthesis. */
function councilRows(
  a: GainVerdict,
  b: GainVerdict | null,
  c: GainVerdict,
  panel: GainVerdict,
): ReportStageRow[] {
  return [
    row('stage1', 'sim/c', graded(c)),
    ...(b === null ? [] : [row('stage1', 'sim/b', graded(b))]),
    row('stage1', 'sim/a', graded(a)),
    row('stage2_label_map', null, b === null ? { 'Response A': 'sim/a', 'Response B': 'sim/c' } : LABELS),
    row('stage2', 'sim/a', { parsedRanking: ['Response A'] }),
    row('stage3', 'sim/chair', graded(panel)),
  ];
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
  batchId: 'g',
  name: null,
  status: 'complete' as const,
  generatedAt: '2026-01-01T00:00:00.000Z',
};

describe('panel-gain records from report rows', () => {
  it('council: seats from the label map (roster order), the panel from stage3, usage from the item', () => {
    const rec = panelGainItem(
      item('council', 4, { key: 'k', expected: 42, costUsd: 0.5, tokens: 900, durationMs: 1200 }),
      councilRows('correct', 'incorrect', 'unreadable', 'correct'),
    );
    expect(rec).toEqual({
      index: 4,
      key: 'k',
      members: [
        { seat: 3, model: 'sim/c', grade: 'unreadable' },
        { seat: 2, model: 'sim/b', grade: 'incorrect' },
        { seat: 1, model: 'sim/a', grade: 'correct' },
      ],
      panel: 'correct',
      costUsd: 0.5,
      tokens: 900,
      latencyMs: 1200,
    });
  });

  it('an ungraded item, or a mode without a panel, gives no record', () => {
    expect(panelGainItem(item('council', 0), [row('stage3', 'sim/chair', {})])).toBeNull();
    expect(panelGainItem(item('jury', 0), [row('verdict', 'sim/f', graded('correct'))])).toBeNull();
  });

  it('vote: seats from participants, the winner row is the panel', () => {
    const rec = panelGainItem(item('vote', 0, { expected: 'B' }), [
      row('initial_answer', 'sim/y', graded('incorrect'), 1),
      row('initial_answer', 'sim/x', graded('correct'), 0),
      row('vote', 'sim/x', { votedFor: 'Response A' }, 0),
      row('vote_winner', 'sim/x', graded('correct'), 0),
    ]);
    expect(rec?.members).toEqual([
      { seat: 2, model: 'sim/y', grade: 'incorrect' },
      { seat: 1, model: 'sim/x', grade: 'correct' },
    ]);
    expect(rec?.panel).toBe('correct');
  });

  it('debate: revised grades by participant, null where a member has no graded revision', () => {
    const rec = panelGainItem(item('debate', 0, { expected: 3 }), [
      row('initial_answer', 'sim/x', graded('incorrect'), 0),
      row('initial_answer', 'sim/y', graded('correct'), 1),
      row('initial_answer', 'sim/z', graded('correct'), 2),
      row('revision', 'sim/z', graded('incorrect'), 2),
      row('revision', 'sim/x', graded('correct'), 0),
      row('debate_winner', 'sim/y', graded('correct'), 1),
    ]);
    expect(rec?.members).toEqual([
      { seat: 1, model: 'sim/x', grade: 'incorrect', revisedGrade: 'correct' },
      { seat: 2, model: 'sim/y', grade: 'correct', revisedGrade: null },
      { seat: 3, model: 'sim/z', grade: 'correct', revisedGrade: 'incorrect' },
    ]);
  });

  it('Delphi: first-round members, the last round’s panel value, errors against a numeric expected', () => {
    const rows = [
      row('round_1', 'sim/p', graded('incorrect', { type: 'numeric', estimate: 90 }), 0),
      row('round_1', 'sim/q', graded('correct', { type: 'numeric', estimate: 100 }), 1),
      row('round_1_stats', null, graded('incorrect', { median: 95 })),
      row('round_2', 'sim/p', graded('correct', { type: 'numeric', estimate: 99 }), 0),
      row('round_2_stats', null, graded('correct', { median: 99.5 })),
    ];
    const rec = panelGainItem(item('delphi', 0, { expected: '100' }), rows);
    expect(rec?.members.map((m) => [m.seat, m.grade])).toEqual([
      [1, 'incorrect'],
      [2, 'correct'],
    ]);
    expect(rec?.panel).toBe('correct');
    expect(rec?.delphi).toEqual({ firstMedianError: 5, finalError: 0.5 });
    // A text expected answer has no error.
    expect(panelGainItem(item('delphi', 0, { expected: 'about a hundred' }), rows)?.delphi).toBeNull();
  });

  it('numericExpected reads numbers and numeric strings only', () => {
    expect(numericExpected(3)).toBe(3);
    expect(numericExpected(' -2.5e1 ')).toBe(-25);
    expect(numericExpected('12 apples')).toBeNull();
    expect(numericExpected('')).toBeNull();
    expect(numericExpected(null)).toBeNull();
  });

  it('council seats follow the model when a failed member shifts the labels; withAllSeats fills the gap', () => {
    const shifted = [
      panelGainItem(item('council', 0), councilRows('correct', null, 'incorrect', 'correct'))!,
      panelGainItem(item('council', 1), councilRows('correct', 'correct', 'correct', 'correct'))!,
    ];
    // Seat 2's call failed on item 0: the label map names sim/c "Response B" there.
    expect(shifted[0].members.find((m) => m.model === 'sim/c')?.seat).toBe(2);
    const [first, second] = withAllSeats(councilSeats(shifted));
    expect(first.members).toEqual([
      { seat: 1, model: 'sim/a', grade: 'correct' },
      { seat: 2, model: 'sim/b', grade: null },
      { seat: 3, model: 'sim/c', grade: 'incorrect' },
    ]);
    expect(second.members.map((m) => [m.seat, m.model])).toEqual([
      [1, 'sim/a'],
      [2, 'sim/b'],
      [3, 'sim/c'],
    ]);
  });

  it('withAllSeats keeps a revised grade slot for a missing debate seat', () => {
    const [a, b] = withAllSeats([
      {
        index: 0,
        members: [
          { seat: 1, model: 'x', grade: 'correct', revisedGrade: 'correct' },
          { seat: 2, model: 'y', grade: 'incorrect', revisedGrade: null },
        ],
        panel: 'correct',
      },
      {
        index: 1,
        members: [{ seat: 2, model: 'y', grade: 'correct', revisedGrade: 'correct' }],
        panel: 'correct',
      },
    ]);
    expect(a.members).toHaveLength(2);
    expect(b.members[0]).toEqual({ seat: 1, model: 'x', grade: null, revisedGrade: null });
  });
});

describe('the batch report’s panel-gain section', () => {
  const verdicts: [GainVerdict, GainVerdict, GainVerdict, GainVerdict][] = [
    ['correct', 'correct', 'incorrect', 'correct'],
    ['correct', 'incorrect', 'incorrect', 'incorrect'],
    ['incorrect', 'correct', 'correct', 'correct'],
    ['correct', 'correct', 'correct', 'correct'],
    ['incorrect', 'incorrect', 'correct', 'correct'],
    ['correct', 'unreadable', 'correct', 'correct'],
    ['incorrect', 'incorrect', 'incorrect', 'incorrect'],
    ['correct', 'correct', 'incorrect', 'correct'],
  ];

  it('is the library’s panelGain over the graded complete items, with its methods in the report', () => {
    const builder = new BatchReportBuilder({ seed: 'g', resamples: 200 });
    const records = [];
    for (const [i, [a, b, c, p]] of verdicts.entries()) {
      const it = item('council', i, { expected: 1, costUsd: 0.01 * (i + 1), tokens: 100, durationMs: 50 });
      const rows = councilRows(a, b, c, p);
      builder.addItem(it, rows);
      records.push(panelGainItem(it, rows)!);
    }
    builder.addItem(
      item('council', 8, { status: 'failed', expected: 1 }),
      councilRows('correct', 'correct', 'correct', 'correct'),
    );
    const report = builder.result(META, EMPTY);
    expect(report.panelGain).toHaveLength(1);
    const [section] = report.panelGain!;
    const expected = panelGain(withAllSeats(councilSeats(records)), { seed: 'g:council', resamples: 200 });
    expect(section).toEqual({ mode: 'council', ...expected, sentences: panelGainSentences(expected) });
    expect(section.items).toBe(8);
    expect(section.panel.count).toBe(6);
    expect(section.members.map((m) => m.accuracy.count)).toEqual([5, 4, 4]);
    const names = report.method.methods.filter((m) =>
      m.usedFor.some((u) => u.startsWith('panel gain (council)')),
    );
    expect(names.map((m) => m.name)).toEqual(section.method.methods.map((m) => m.name));
    expect(names.map((m) => m.name)).toContain('Wilson score interval');
  });

  it('is absent (no key at all) when no item carries a grade', () => {
    const builder = new BatchReportBuilder({ seed: 'g', resamples: 50 });
    builder.addItem(item('council', 0), [
      row('stage2_label_map', null, LABELS),
      row('stage2', 'sim/a', { parsedRanking: ['Response A', 'Response B', 'Response C'] }),
      row('stage3', 'sim/chair', {}),
    ]);
    const report = builder.result(META, EMPTY);
    expect('panelGain' in report).toBe(false);
    expect(report.method.methods.some((m) => m.usedFor.some((u) => u.startsWith('panel gain')))).toBe(false);
  });
});

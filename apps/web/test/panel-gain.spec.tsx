/** @jest-environment jsdom */
import { BatchReportBuilder, type ReportAggregates } from '@conclave/analysis';
import type { BatchReport, ReportItem, ReportStageRow } from '@conclave/contracts';
import { act, render, screen, within } from '@testing-library/react';
import type { ReactElement } from 'react';
import { ReportView } from '../src/report';
import { sleep } from '../../../test/support/wait';

const HOSTILE = '<img src=x onerror="window.pwned=1">';

const AGGREGATES: ReportAggregates = {
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

const graded = (verdict: string) => ({ grade: { verdict, grader: 'numeric' } });
const row = (stageType: string, model: string | null, data: object, participant: number | null = null) =>
  ({ stageType, model, participant, data }) as ReportStageRow;
const item = (mode: 'debate' | 'council', index: number): ReportItem => ({
  index,
  messageId: `m-${index}`,
  mode,
  status: 'complete',
  reference: null,
  key: null,
  expected: 7,
  costUsd: 0.002,
  tokens: 300,
  durationMs: 800,
});

/** Eight debate items over three debaters (seat 1 named with HTML), revisions on every item. */
function debateReport(): BatchReport {
  const builder = new BatchReportBuilder({ seed: 'w', resamples: 100 });
  const plan: [string[], string[], string][] = [
    [['correct', 'incorrect', 'correct'], ['correct', 'correct', 'correct'], 'correct'],
    [['incorrect', 'incorrect', 'correct'], ['incorrect', 'incorrect', 'correct'], 'incorrect'],
    [['correct', 'correct', 'incorrect'], ['correct', 'correct', 'correct'], 'correct'],
    [['incorrect', 'correct', 'correct'], ['correct', 'correct', 'correct'], 'correct'],
    [['correct', 'unreadable', 'correct'], ['correct', 'correct', 'incorrect'], 'correct'],
    [['incorrect', 'incorrect', 'incorrect'], ['incorrect', 'incorrect', 'incorrect'], 'incorrect'],
    [['correct', 'incorrect', 'incorrect'], ['incorrect', 'incorrect', 'incorrect'], 'incorrect'],
    [['correct', 'correct', 'correct'], ['correct', 'correct', 'correct'], 'correct'],
  ];
  const models = [HOSTILE, 'sim/b', 'sim/c'];
  plan.forEach(([first, revised, panel], index) =>
    builder.addItem(item('debate', index), [
      ...first.map((v, p) => row('initial_answer', models[p], graded(v), p)),
      ...revised.map((v, p) => row('revision', models[p], { ...graded(v), parseSuccess: true }, p)),
      row('debate_winner', 'sim/b', graded(panel), 1),
    ]),
  );
  return builder.result(
    { batchId: 'w', name: 'graded', status: 'complete', generatedAt: '2026-01-01T00:00:00.000Z' },
    AGGREGATES,
  );
}

async function show(ui: ReactElement) {
  const result = render(ui);
  await act(async () => sleep(0));
  return result;
}

beforeEach(() => {
  global.fetch = jest.fn(async () => ({
    ok: true,
    status: 200,
    json: async () => [],
  })) as unknown as typeof fetch;
});

describe('ReportView: panel gain of a graded batch', () => {
  it('shows the sentences, the accuracy and difference tables and the revisions, model names as text', async () => {
    const report = debateReport();
    const [gain] = report.panelGain!;
    const { container } = await show(<ReportView report={report} />);
    const section = screen.getByRole('region', { name: 'panel gain debate' });
    expect(within(section).getByRole('heading').textContent).toBe('Panel gain: debate');
    for (const sentence of gain.sentences) expect(section.textContent).toContain(sentence);
    expect(section.textContent).toContain('The panel was right on 62.5 % of items (5 of 8)');
    const accuracy = within(section).getByRole('table', { name: 'panel gain debate accuracy' });
    const rows = within(accuracy).getAllByRole('row');
    // Header, three seats, the held-out best, the majority, the panel.
    expect(rows).toHaveLength(7);
    expect(rows[1].textContent).toContain(`Seat 1: ${HOSTILE} (best)`);
    expect(rows[1].textContent).toContain('62.5%');
    expect(rows[2].textContent).toMatch(/Seat 2: sim\/b.*37\.5%.*\(3\/8\).*1.*0/);
    expect(rows[6].textContent).toContain('Panel (final answer)');
    const differences = within(section).getByRole('table', { name: 'panel gain debate differences' });
    expect(within(differences).getAllByRole('row')).toHaveLength(4);
    expect(differences.textContent).toContain('not run (');
    // First answers 13 right of 24, revised 15: 4 fixed (item 0 seat 2, items 2 and 3, item 4 seat 2), 2 broke.
    expect(section.textContent).toContain(
      `${gain.revision!.fixed} fixed a wrong answer, ${gain.revision!.broke} broke a right one`,
    );
    expect([gain.revision!.fixed, gain.revision!.broke]).toEqual([4, 2]);
    expect(section.textContent).toMatch(/Per correct answer of the panel: cost \$0\.0032/);
    expect(container.querySelector('img')).toBeNull();
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
    const methods = screen.getByRole('table', { name: 'methods' });
    expect(methods.textContent).toContain('panel gain (debate): panel − majority');
  });

  it('has no panel-gain section when the batch is ungraded', async () => {
    const report = debateReport();
    delete report.panelGain;
    await show(<ReportView report={report} />);
    expect(screen.queryByRole('region', { name: /panel gain/ })).toBeNull();
  });
});

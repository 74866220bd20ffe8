import { LONG_COLUMNS, type LongRow } from '@conclave/analysis';
import type { ReportAttemptRow, ReportCallRow, ReportItem, ReportStageRow } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import { LONG_CSV_HEADER_LINE, longCsvRecords, longExportPages, longJsonl } from './batch-long-export';

const item = (index: number, overrides: Partial<ReportItem> = {}): ReportItem => ({
  index,
  messageId: `m${index}`,
  mode: 'vote',
  status: 'complete',
  reference: null,
  key: null,
  ...overrides,
});

const attempt = (index: number, overrides: Partial<ReportAttemptRow> = {}): ReportAttemptRow => ({
  index,
  messageId: `m${index}`,
  attempt: 1,
  latest: true,
  mode: 'vote',
  status: 'complete',
  error: null,
  dispatchedAt: '2026-01-01T00:00:00.000Z',
  completedAt: '2026-01-01T00:00:01.500Z',
  durationMs: 1500,
  ...overrides,
});

const call = (messageId: string, overrides: Partial<ReportCallRow> = {}): ReportCallRow => ({
  messageId,
  stage: 'initial_answer',
  callKey: 'k',
  model: 'sim/a',
  ok: true,
  promptTokens: 10,
  completionTokens: 5,
  costUsd: 0.001,
  latencyMs: 42,
  finishedAt: '2026-01-01T00:00:01.000Z',
  ...overrides,
});

const voteRows: ReportStageRow[] = [
  { stageType: 'initial_answer', model: 'sim/a', participant: 0, data: null },
  { stageType: 'initial_answer', model: 'sim/b', participant: 1, data: null },
  {
    stageType: 'vote_label_map',
    model: null,
    participant: null,
    data: { 'Response A': 'sim/b', 'Response B': 'sim/a' },
  },
  { stageType: 'vote', model: 'sim/a', participant: 0, data: { votedFor: 'Response A' } },
  { stageType: 'vote', model: 'sim/b', participant: 1, data: { votedFor: 'Response A' } },
  {
    stageType: 'vote_tally',
    model: null,
    participant: null,
    data: { tallies: { 'Response A': 2 }, validVoteCount: 2 },
  },
  {
    stageType: 'vote_winner',
    model: 'sim/b',
    participant: null,
    data: { winnerModel: 'sim/b', winnerLabel: 'Response A' },
  },
];

/** A fake of the four queries, recording the pages asked for. */
function fakeReports(items: ReportItem[]) {
  const asked: { after: number; limit: number }[] = [];
  return {
    asked,
    reports: {
      itemsPage: async (_batch: string, after: number, limit: number) => {
        asked.push({ after, limit });
        return items.filter((i) => i.index > after).slice(0, limit);
      },
      attemptsOf: async (_batch: string, from: number, to: number) =>
        items
          .filter((i) => i.index >= from && i.index <= to)
          .map((i) => attempt(i.index, { status: i.status })),
      callsOf: async (ids: string[]) => new Map(ids.map((id) => [id, [call(id)]])),
      stageRows: async (ids: string[]) =>
        new Map(ids.map((id) => [id, voteRows.map((r) => ({ ...r, messageId: id }))])),
    },
  };
}

const collect = async (pages: AsyncGenerator<LongRow[]>) => {
  const all: LongRow[][] = [];
  for await (const page of pages) all.push(page);
  return all;
};

describe('long export pages', () => {
  it('reads 500 items a page and gives every item its attempt, call and judgement rows', async () => {
    const items = Array.from({ length: 1001 }, (_, i) => item(i, { key: `k${i}`, reference: 'sim/b' }));
    const { reports, asked } = fakeReports(items);
    const pages = await collect(longExportPages(reports, 'b'));
    expect(pages).toHaveLength(3);
    expect(asked.map((a) => a.after)).toEqual([-1, 499, 999, 1000]);
    expect(asked.every((a) => a.limit === 500)).toBe(true);
    const first = pages[0].filter((r) => r.index === 0);
    expect(first.map((r) => r.kind)).toEqual([
      'item',
      'call',
      'contestant',
      'contestant',
      'vote',
      'vote',
      'outcome',
    ]);
    expect(first.every((r) => r.key === 'k0' && r.reference === 'sim/b')).toBe(true);
    expect(first.find((r) => r.kind === 'outcome')).toMatchObject({ subject: 'sim/b', label: 'Response A' });
  });

  it('reads no stage rows of an item that is not complete or failed', async () => {
    const { reports } = fakeReports([item(0, { status: 'cancelled' })]);
    const [page] = await collect(longExportPages(reports, 'b'));
    expect(page.map((r) => r.kind)).toEqual(['item', 'call']);
  });
});

describe('long export rendering', () => {
  it('writes every column in order, numbers bare, booleans as true/false, formula-like text neutralised', async () => {
    const { reports } = fakeReports([item(0, { key: '=HYPERLINK("x")', reference: -2 })]);
    const [page] = await collect(longExportPages(reports, 'b'));
    expect(LONG_CSV_HEADER_LINE.trim().split(',')).toEqual([...LONG_COLUMNS]);
    const csv = LONG_CSV_HEADER_LINE + longCsvRecords(page);
    const sheet = parse(csv, { columns: true }) as Record<string, string>[];
    expect(sheet).toHaveLength(page.length);
    expect(sheet[0]).toMatchObject({
      kind: 'item',
      index: '0',
      key: `'=HYPERLINK("x")`,
      reference: '-2',
      latest: 'true',
      durationMs: '1500',
    });
    expect(sheet[1]).toMatchObject({
      kind: 'call',
      ok: 'true',
      promptTokens: '10',
      costUsd: '0.001',
      latencyMs: '42',
    });
    // A number is written bare (a spreadsheet reads -2 as the number, not a formula).
    expect(csv.split('\n')[1]).toMatch(/^"item",0,"'=HYPERLINK\(""x""\)",-2,/);
  });

  it('writes JSONL with every column and the values exactly as read', async () => {
    const { reports } = fakeReports([item(0, { key: '=x' })]);
    const [page] = await collect(longExportPages(reports, 'b'));
    const lines = longJsonl(page)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LongRow);
    expect(lines).toEqual(page);
    expect(Object.keys(lines[0])).toEqual(expect.arrayContaining([...LONG_COLUMNS]));
    expect(lines[0].key).toBe('=x');
    expect(longJsonl([])).toBe('');
  });
});

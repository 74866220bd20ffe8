import type { BatchResultLine } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import { csvRecords, neutraliseCell } from './batch-export';

const line = (overrides: Partial<BatchResultLine>): BatchResultLine => ({
  index: 0,
  messageId: 'm',
  conversationId: 'c',
  mode: 'council',
  status: 'complete',
  error: null,
  question: 'q',
  answer: 'a',
  headline: null,
  resultUrl: '/api/deliberations/m',
  ...overrides,
});

describe('CSV export cells', () => {
  it.each([
    '=1+1',
    '+1',
    '-2+3',
    '@SUM(1)',
    '\t=1',
    '\rx',
    '\tplain',
    ' =1',
    '\n @x',
    '\u00a0=1',
    '\uFF1D1+1',
    '\uFF0B1',
    '\uFF0D1',
    '\uFF20SUM(1)',
  ])('prefixes %j with a single quote', (value) => {
    expect(neutraliseCell(value)).toBe(`'${value}`);
  });

  it.each(['plain', '1+1', "'already", 'a=b', '', ' text', '{"x":-1}', 'x\n=1'])(
    'leaves %j alone',
    (value) => {
      expect(neutraliseCell(value)).toBe(value);
    },
  );

  it('quotes text cells and leaves numbers bare: the index, and a Delphi numeric final value', () => {
    const csv = csvRecords([
      line({ index: 3, question: '-0.5?', answer: '-0.5' }),
      line({
        index: 4,
        mode: 'delphi',
        answer: '-0.5',
        headline: { finalValue: -0.5, converged: true, rounds: 2, questionType: 'numeric' },
      }),
      line({
        index: 5,
        mode: 'delphi',
        answer: '=1',
        headline: { finalValue: null, questionType: 'categorical' },
      }),
    ]);
    const rows = csv.trim().split('\n');
    expect(rows[0]).toMatch(/^3,"m","c","council","complete","","'-0\.5\?","'-0\.5","","\/api/);
    expect(rows[1]).toMatch(/^4,"m","c","delphi","complete","","q",-0\.5,"\{/);
    expect(rows[2]).toMatch(/^5,.*,"'=1",/);
    const parsed = parse(csv) as string[][];
    expect(parsed.map((r) => r[7])).toEqual(["'-0.5", '-0.5', "'=1"]);
  });
});

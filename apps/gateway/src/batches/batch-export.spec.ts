import type { BatchResultLine } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import {
  CSV_HEADER_LINE,
  GRADED_CSV_HEADER_LINE,
  csvRecords,
  itemTexts,
  neutraliseCell,
} from './batch-export';

const line = (overrides: Partial<BatchResultLine>): BatchResultLine => ({
  index: 0,
  messageId: 'm',
  conversationId: 'c',
  mode: 'council',
  status: 'complete',
  error: null,
  attempt: 1,
  key: null,
  reference: null,
  question: 'q',
  content: null,
  originalQuestion: null,
  answer: 'a',
  headline: null,
  resultUrl: '/api/deliberations/m',
  degraded: null,
  partial: null,
  ...overrides,
});

/** The CSV export of these lines, header included, as a spreadsheet program reads it. */
const sheet = (lines: BatchResultLine[]) =>
  parse(CSV_HEADER_LINE + csvRecords(lines), { columns: true }) as Record<string, string>[];

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
    expect(rows[0]).toMatch(/^3,"m","c","council","complete","",1,"'-0\.5\?","","","'-0\.5","","\/api/);
    expect(rows[1]).toMatch(/^4,"m","c","delphi","complete","",1,"q","","",-0\.5,"\{/);
    expect(rows[2]).toMatch(/^5,.*,"'=1",/);
    const parsed = parse(csv) as string[][];
    expect(parsed.map((r) => r[10])).toEqual(["'-0.5", '-0.5', "'=1"]);
  });
});

describe('CSV export columns', () => {
  it('has the question, the content and the original question each in a column of its own', () => {
    expect(CSV_HEADER_LINE.trim().split(',')).toEqual([
      'index',
      'message_id',
      'conversation_id',
      'mode',
      'status',
      'error',
      'attempt',
      'question',
      'content',
      'original_question',
      'answer',
      'headline',
      'result_url',
      'degraded',
      'partial',
      'key',
      'reference',
    ]);
    const rows = sheet([
      line({ index: 0, question: 'Is a monorepo right?', answer: 'Yes, for a small team.' }),
      line({
        index: 1,
        mode: 'jury',
        question: 'Review the users endpoint docs',
        content: '## GET /api/users\nReturns a list of users.',
        originalQuestion: 'Document the users endpoint',
        answer: 'APPROVE',
      }),
      line({
        index: 2,
        mode: 'jury',
        question: 'Review',
        content: '-1 is the answer',
        originalQuestion: '=2-3',
      }),
    ]);
    expect(rows.map((r) => [r.mode, r.question, r.content, r.original_question, r.answer])).toEqual([
      ['council', 'Is a monorepo right?', '', '', 'Yes, for a small team.'],
      [
        'jury',
        'Review the users endpoint docs',
        '## GET /api/users\nReturns a list of users.',
        'Document the users endpoint',
        'APPROVE',
      ],
      // formula-like content and original questions are neutralised like every other text cell
      ['jury', 'Review', "'-1 is the answer", "'=2-3", 'a'],
    ]);
  });
});

describe('CSV export of degraded and partial items', () => {
  it('names who is missing and why, and carries what a stopped item kept, each cell neutralised', () => {
    const rows = sheet([
      line({ index: 0 }),
      line({
        index: 1,
        status: 'cancelled',
        answer: null,
        degraded: {
          asked: 2,
          answered: 1,
          summary: '1 of 2 answered — sim/y: cancelled: the deliberation was stopped',
          missing: [],
        },
        partial: {
          reason: 'cancelled',
          why: 'Cancelled by the user.',
          stage: 'stage1',
          answers: [
            {
              stage: 'stage1',
              participant: 'sim/a',
              model: 'sim/a',
              content: 'A says',
              finishReason: 'stop',
            },
          ],
          cut: [],
        },
      }),
      line({
        index: 2,
        degraded: { asked: 1, answered: 0, summary: '=HYPERLINK("x")', missing: [] },
      }),
    ]);
    expect(rows.map((r) => r.degraded)).toEqual([
      '',
      '1 of 2 answered — sim/y: cancelled: the deliberation was stopped',
      `'=HYPERLINK("x")`,
    ]);
    expect(rows[0].partial).toBe('');
    expect(JSON.parse(rows[1].partial)).toMatchObject({
      stage: 'stage1',
      answers: [{ model: 'sim/a', content: 'A says' }],
    });
  });
});

describe('what a results line says the item was asked', () => {
  it('a council, vote, debate or Delphi item: its question, no content', () => {
    for (const mode of ['council', 'vote', 'debate', 'delphi'] as const) {
      expect(itemTexts(mode, 'Which database?', { models: ['sim/a'] })).toEqual({
        question: 'Which database?',
        content: null,
        originalQuestion: null,
      });
    }
  });

  it('a jury item: its question, and from its config the content and the question it answered', () => {
    const config = {
      content: 'Water boils at 100 degrees at sea level.',
      originalQuestion: 'At what temperature does water boil?',
      jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
      foremanModel: 'sim/foreman',
      timeoutMs: 1000,
    };
    expect(itemTexts('jury', 'Is this right?', config)).toEqual({
      question: 'Is this right?',
      content: 'Water boils at 100 degrees at sea level.',
      originalQuestion: 'At what temperature does water boil?',
    });
    const { originalQuestion: _none, ...withoutOriginal } = config;
    expect(itemTexts('jury', 'Is this right?', withoutOriginal)).toEqual({
      question: 'Is this right?',
      content: 'Water boils at 100 degrees at sea level.',
      originalQuestion: null,
    });
  });

  it('ignores an original question that is not text', () => {
    expect(itemTexts('jury', 'q', { content: 'c', originalQuestion: 42 }).originalQuestion).toBeNull();
    expect(itemTexts('council', 'q', null).originalQuestion).toBeNull();
  });
});

describe('CSV export of key and reference', () => {
  it('carries each item’s key and reference: a number stays a number, text is neutralised', () => {
    const csv = csvRecords([
      line({ index: 0, key: 'q-1', reference: 'APPROVE' }),
      line({ index: 1, key: '=cmd', reference: -3.5 }),
      line({ index: 2 }),
    ]);
    const rows = csv.trim().split('\n');
    expect(rows[1]).toMatch(/,"'=cmd",-3\.5$/);
    const parsed = sheet([
      line({ index: 0, key: 'q-1', reference: 'APPROVE' }),
      line({ index: 1, key: '=cmd', reference: -3.5 }),
      line({ index: 2 }),
    ]);
    expect(parsed.map((r) => [r.key, r.reference])).toEqual([
      ['q-1', 'APPROVE'],
      ["'=cmd", '-3.5'],
      ['', ''],
    ]);
  });
});

describe('CSV export of graded items (issue 37)', () => {
  it('has expected and verdict columns, last, only when asked (a batch with graded items); cells neutralised', () => {
    const lines = [
      line({ index: 0, expected: 391, grade: { verdict: 'correct', extracted: '391', grader: 'numeric' } }),
      line({ index: 1, expected: '=cmd', grade: { verdict: 'unreadable', grader: 'exact' } }),
      line({ index: 2, expected: 'B', grade: null }),
      line({ index: 3 }),
    ];
    const rows = parse(GRADED_CSV_HEADER_LINE + csvRecords(lines, true), { columns: true }) as Record<
      string,
      string
    >[];
    expect(Object.keys(rows[0]).slice(-2)).toEqual(['expected', 'verdict']);
    expect(rows.map((r) => [r.expected, r.verdict])).toEqual([
      ['391', 'correct'],
      ["'=cmd", 'unreadable'],
      ['B', ''],
      ['', ''],
    ]);
    // A number stays a bare number.
    expect(csvRecords(lines.slice(0, 1), true).trim()).toMatch(/,391,"correct"$/);
    // Without grading, the export is as before: no such columns.
    expect(Object.keys(sheet(lines)[0])).not.toContain('expected');
    expect(csvRecords(lines)).toBe(csvRecords(lines.map(({ expected: _e, grade: _g, ...rest }) => rest)));
  });
});

import fc from 'fast-check';
import {
  datasetFormatOf,
  describeProblem,
  isNumericAnswer,
  parseDataset,
  questionWithChoices,
  type ParsedDataset,
} from './dataset';

const items = (parsed: ParsedDataset) => {
  if (!parsed.ok) throw new Error(parsed.problems.map(describeProblem).join('\n'));
  return parsed.items;
};
const problems = (parsed: ParsedDataset) => {
  if (parsed.ok) throw new Error('expected problems');
  return parsed.problems.map(describeProblem);
};

describe('parseDataset: JSONL', () => {
  it('reads question/answer lines with a grader hint: numeric, text; ids become keys', () => {
    const text = [
      '{"id": 1, "question": "What is 6 x 7?", "answer": 42}',
      '',
      '{"question": "How far, in km?", "answer": "1,250.5"}',
      '{"question": "Capital of France?", "expected": " Paris "}',
      '{"Question": "Half of 7?", "Answer": "3.5", "key": "k-4"}',
    ].join('\n');
    expect(items(parseDataset(text))).toEqual([
      { line: 1, key: '1', question: 'What is 6 x 7?', expected: '42', graderHint: 'numeric' },
      { line: 3, question: 'How far, in km?', expected: '1250.5', graderHint: 'numeric' },
      { line: 4, question: 'Capital of France?', expected: 'Paris', graderHint: 'text' },
      { line: 5, key: 'k-4', question: 'Half of 7?', expected: '3.5', graderHint: 'numeric' },
    ]);
  });

  it('reads multiple-choice items: choices as an array or A/B/C/D fields; answer as letter, text or 0-based index', () => {
    const text = [
      '{"question": "2+2?", "choices": ["3", "4", "5"], "answer": "b"}',
      '{"question": "2+3?", "choices": ["5", "6"], "answer": 0}',
      '{"question": "Largest?", "choices": ["ant", "whale"], "answer": "whale"}',
      '{"question": "Odd one?", "A": "2", "B": "4", "C": "7", "D": "8", "answer": "(C)"}',
    ].join('\n');
    const parsed = items(parseDataset(text));
    expect(parsed.map((i) => [i.expected, i.graderHint, i.choices])).toEqual([
      ['B', 'choice', ['3', '4', '5']],
      ['A', 'choice', ['5', '6']],
      ['B', 'choice', ['ant', 'whale']],
      ['C', 'choice', ['2', '4', '7', '8']],
    ]);
    expect(questionWithChoices(parsed[0])).toBe('2+2?\n\nA) 3\nB) 4\nC) 5');
    expect(questionWithChoices({ question: 'plain' })).toBe('plain');
  });

  it('names the line of every malformed item', () => {
    const text = [
      '{"question": "ok", "answer": 1}',
      '{"question": "no answer"}',
      'not json',
      '[1, 2]',
      '{"question": "", "answer": 1}',
      '{"question": "bad letter", "choices": ["a", "b"], "answer": "E"}',
      '{"question": "bad index", "choices": ["a", "b"], "answer": 2}',
      '{"question": "one choice", "choices": ["a"], "answer": "A"}',
      '{"question": "choices text", "choices": "a, b", "answer": "A"}',
      '{"question": 5, "answer": 1}',
      '{"question": "gap", "A": "x", "C": "y", "answer": "A"}',
      '{"question": "object answer", "answer": {"x": 1}}',
    ].join('\r\n');
    expect(problems(parseDataset(text))).toEqual([
      'line 2: no answer (an "answer" field)',
      expect.stringMatching(/^line 3: not valid JSON/),
      'line 4: each line must be one JSON object',
      'line 5: "question" is empty',
      'line 6: "answer" "E" names none of the 2 choices (a letter A–B, a 0-based index or a choice\'s text)',
      'line 7: "answer" 2 names none of the 2 choices (a letter A–B, a 0-based index or a choice\'s text)',
      'line 8: a multiple-choice item needs at least two choices',
      'line 9: "choices" must be a JSON array of texts, e.g. ["3", "4", "5"]',
      'line 10: "question" must be text',
      'line 11: choice C is given but choice B is empty',
      'line 12: "answer" must be text or a number',
    ]);
  });

  it('stops after maxProblems, refuses an empty file and more than maxItems', () => {
    const bad = Array.from({ length: 50 }, () => 'nope').join('\n');
    const parsed = parseDataset(bad, { format: 'jsonl', maxProblems: 3 });
    expect(problems(parsed)).toHaveLength(3);
    expect(problems(parseDataset('\n\n', { format: 'jsonl' }))).toEqual(['line 1: the file has no items']);
    const three = [
      '{"question":"a","answer":1}',
      '{"question":"b","answer":2}',
      '{"question":"c","answer":3}',
    ];
    expect(problems(parseDataset(three.join('\n'), { maxItems: 2 }))).toEqual([
      'line 3: more than 2 items (3)',
    ]);
  });
});

describe('parseDataset: CSV', () => {
  it('reads question/answer columns, with a BOM, CRLF, quoted cells and extra columns', () => {
    const text =
      '\uFEFFid,Question,answer,notes\r\n7,"What is 1,000 + 1?",1001,x\r\n8,"Say ""yes""",yes,\r\n';
    expect(items(parseDataset(text, { fileName: 'set.CSV' }))).toEqual([
      { line: 2, key: '7', question: 'What is 1,000 + 1?', expected: '1001', graderHint: 'numeric' },
      { line: 3, key: '8', question: 'Say "yes"', expected: 'yes', graderHint: 'text' },
    ]);
  });

  it('reads choices as a JSON array column or as A/B/C/D columns', () => {
    const json = 'question,choices,answer\n"2+2?","[""3"",""4""]",B\n';
    expect(items(parseDataset(json))[0]).toMatchObject({
      choices: ['3', '4'],
      expected: 'B',
      graderHint: 'choice',
    });
    const lettered = 'question,A,B,C,D,answer\nPick,x,y,z,w,z\nTwo only,x,y,,,a\n';
    expect(items(parseDataset(lettered)).map((i) => [i.expected, i.choices])).toEqual([
      ['C', ['x', 'y', 'z', 'w']],
      ['A', ['x', 'y']],
    ]);
    // A CSV cell is text: "0" is no index (only JSONL numbers are).
    expect(problems(parseDataset('question,A,B,answer\nq,x,y,0\n'))).toEqual([
      'line 2 (record 2): "answer" "0" names none of the 2 choices (a letter A–B or a choice\'s text)',
    ]);
  });

  it('keeps spreadsheet-formula-looking cells as data, never evaluated', () => {
    const text = 'question,answer\n"=HYPERLINK(""http://x"",""click"")",=2+3\n@SUM(A1),+5\n-cmd,-7\n';
    expect(items(parseDataset(text))).toEqual([
      { line: 2, question: '=HYPERLINK("http://x","click")', expected: '=2+3', graderHint: 'text' },
      { line: 3, question: '@SUM(A1)', expected: '+5', graderHint: 'numeric' },
      { line: 4, question: '-cmd', expected: '-7', graderHint: 'numeric' },
    ]);
  });

  it('names the line and record of malformed input', () => {
    expect(problems(parseDataset('question,answer\n"never closed,1\n2,3\n'))).toEqual([
      'line 2 (record 2): a quoted cell is never closed',
    ]);
    expect(problems(parseDataset('question,answer\nq,1\nq "x",2\n'))).toEqual([
      expect.stringMatching(/^line 3 \(record 3\): a quote inside an unquoted cell \(cell 1\)/),
    ]);
    expect(
      problems(parseDataset('question,answer\n"two\nlines",1,extra\nq,\n,4\n', { format: 'csv' })),
    ).toEqual([
      'line 2 (record 2): 3 cells where the header has 2 columns',
      'line 4 (record 3): "answer" is empty',
      'line 5 (record 4): "question" is empty',
    ]);
    expect(problems(parseDataset('q,a\n1,2\n'))).toEqual([
      'line 1 (record 1): the header must name a "question" and an "answer" column (found: q, a)',
    ]);
    expect(problems(parseDataset('question,answer,Answer\nq,1,2\n'))).toEqual([
      'line 1 (record 1): the column "answer" appears twice in the header',
    ]);
  });
});

describe('formats and numbers', () => {
  it('tells JSONL from CSV by the name, else by the text', () => {
    expect(datasetFormatOf('', 'a.jsonl')).toBe('jsonl');
    expect(datasetFormatOf('{"x":1}', 'a.csv')).toBe('csv');
    expect(datasetFormatOf('\uFEFF  {"question":"q"}')).toBe('jsonl');
    expect(datasetFormatOf('question,answer')).toBe('csv');
  });

  it('reads plain decimal numbers as numeric, anything else as text', () => {
    for (const n of ['42', '-3.5', '+7', '1e3', '2.5E-2', '1,250', '12,345,678.9', '.5']) {
      expect(isNumericAnswer(n)).toBe(true);
    }
    for (const t of ['1,25', '3 apples', '0x10', '=2+3', 'NaN', 'Infinity', '', '1.', '1,2345']) {
      expect(isNumericAnswer(t)).toBe(false);
    }
  });
});

describe('hostile input', () => {
  it('never throws: any text gives items or problems, each problem naming a line', () => {
    const lineish = fc.array(
      fc.oneof(
        fc.string(),
        fc.constantFrom('"', '""', ',', '\r\n', '\n', '\r', '{', '}', '\uFEFF', 'question,answer'),
      ),
      { maxLength: 30 },
    );
    fc.assert(
      fc.property(lineish, fc.constantFrom<'csv' | 'jsonl'>('csv', 'jsonl'), (parts, format) => {
        const parsed = parseDataset(parts.join(''), { format });
        if (!parsed.ok) {
          expect(parsed.problems.length).toBeGreaterThan(0);
          for (const problem of parsed.problems) expect(problem.line).toBeGreaterThanOrEqual(1);
        } else {
          for (const item of parsed.items) expect(item.question.trim()).not.toBe('');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a header alone has no items', () => {
    expect(problems(parseDataset('question,answer\r\n'))).toEqual(['line 1: the file has no items']);
  });
});

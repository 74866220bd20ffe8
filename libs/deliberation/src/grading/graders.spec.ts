import type { Grading } from '@conclave/contracts';
import { readChoice } from './choice';
import { gradeAnswer, isLocalGrading, type LocalGrading } from './graders';
import { lastNumber, parseNumberText, readNumbers } from './numbers';
import { extractAnswerText, finalAnswerLine, normalizeText, unwrapAnswer } from './text';

const local = (grading: Grading): LocalGrading => {
  if (!isLocalGrading(grading)) throw new Error('model grader');
  return grading;
};
const verdictOf = (reply: string, grading: Grading) => gradeAnswer(reply, local(grading)).verdict;

describe('normalizeText', () => {
  it.each([
    ['  Paris ', 'paris'],
    ['PARIS.', 'paris'],
    ['New   York\tCity', 'new york city'],
    ['Ｐａｒｉｓ', 'paris'], // full-width letters fold under NFKC
    ['ﬁnal', 'final'], // ligature
    ['U.S.A.', 'usa'],
    ['3.5', '3.5'], // a decimal point between digits is kept
    ['1,000', '1,000'],
    ['well-known', 'wellknown'],
    ['“quoted”', 'quoted'],
    ['Café', 'café'], // accents are kept
    ['$5', '$5'], // symbols are kept
    ['a\u00a0b\u2003c', 'a b c'], // Unicode spaces
    ['?!...', ''],
    ['', ''],
  ])('%j → %j', (input, expected) => {
    expect(normalizeText(input)).toBe(expected);
  });

  it('keeps letter case when asked', () => {
    expect(normalizeText(' Ｐａｒｉｓ,  France! ', true)).toBe('Paris France');
  });
});

describe('final answer extraction', () => {
  it.each([
    ['Working…\nFINAL ANSWER: 42', '42'],
    ['final answer: Paris', 'Paris'],
    ['**Final Answer:** **Paris**', 'Paris'],
    ['## Final answer: `x = 3`', 'x = 3'],
    ['FINAL_ANSWER: B', 'B'],
    ['Final answer:\n\n  Paris  ', 'Paris'],
    ['FINAL ANSWER: $\\boxed{12}$', '12'],
    ['FINAL ANSWER: 1\nmore thought\nFINAL ANSWER: 2', '2'], // the last one wins
    ['> FINAL ANSWER: quoted\nFINAL ANSWER: own', 'own'],
    ['FINAL ANSWER: own\n> FINAL ANSWER: quoted', 'own'], // a quoted line is not the reply's own
  ])('%j → %j', (reply, expected) => {
    expect(finalAnswerLine(reply)).toBe(expected);
  });

  it.each(['No label here', 'FINAL ANSWER 42', 'the final answer is 42', 'FINAL ANSWER:', '', '   '])(
    '%j has no final answer line',
    (reply) => {
      expect(finalAnswerLine(reply)).toBeNull();
    },
  );

  it('auto falls back to the whole reply, final-answer does not, whole ignores the line', () => {
    expect(extractAnswerText('just Paris', 'auto')).toEqual({ text: 'just Paris', from: 'whole' });
    expect(extractAnswerText('just Paris', 'final-answer').text).toBeNull();
    expect(extractAnswerText('x\nFINAL ANSWER: y', 'whole')).toEqual({
      text: 'x\nFINAL ANSWER: y',
      from: 'whole',
    });
    expect(extractAnswerText('   \n\t', 'auto').text).toBeNull();
  });

  it('unwraps Markdown, quotes and LaTeX', () => {
    expect(unwrapAnswer(' **"Paris"** ')).toBe('Paris');
    expect(unwrapAnswer('$\\boxed{\\text{Paris}}$')).toBe('Paris');
    expect(unwrapAnswer('****')).toBe('');
  });
});

describe('numbers', () => {
  it.each<[string, number[]]>([
    ['1,234.5', [1234.5]],
    ['-3', [-3]],
    ['−3', [-3]],
    ['+3', [3]],
    ['1e3', [1000]],
    ['2.5E-4', [0.00025]],
    ['42%', [42]],
    ['$1,234', [1234]],
    ['-$3', [-3]],
    ['$-3', [-3]],
    ['3 €', [3]],
    ['€3.50', [3.5]],
    ['3/4', [0.75]],
    ['.5', [0.5]],
    ['１２', [12]],
    ['COVID-19', [19]],
    ['5-3', [5, 3]],
    ['1,2,3', [1, 2, 3]],
    ['12,34', [12, 34]],
    ['1 234', [1, 234]],
    ['1.2.3', [1.2, 3]],
    ['2e5x', [2, 5]],
    ['1e999', []],
    ['twelve', []],
    ['The answer is 42.', [42]],
    ['x = 7, so 2x = 14.', [7, 2, 14]],
  ])('%j reads %j', (text, values) => {
    expect(readNumbers(text).map((t) => t.value)).toEqual(values);
  });

  it.each<[string, number | null]>([
    ['42', 42],
    [' 1,234.5 ', 1234.5],
    ['$3', 3],
    ['3 $', 3],
    ['42%', 42],
    ['-1e3', -1000],
    ['3/4', 0.75],
    ['twelve', null],
    ['3 apples', null],
    ['1 2', null],
    ['', null],
    ['-', null],
  ])('parseNumberText(%j) = %j', (text, value) => {
    expect(parseNumberText(text)).toBe(value);
  });

  it('lastNumber is the last', () => {
    expect(lastNumber('first 1 then 2 then -3.5')?.value).toBe(-3.5);
    expect(lastNumber('none')).toBeNull();
  });
});

describe('choice extraction', () => {
  const options = ['Paris', 'London', 'Rome', 'A dog'];
  it.each<[string, string | null]>([
    ['B', 'B'],
    ['b', 'B'],
    ['(B)', 'B'],
    ['[C]', 'C'],
    ['B)', 'B'],
    ['B.', 'B'],
    ['**B**', 'B'],
    ['Answer: B', 'B'],
    ['answer: (c)', 'C'],
    ['The answer is (B) London.', 'B'],
    ['I think the answer is C because Rome.', 'C'],
    ['Reasoning about A and B…\nFINAL ANSWER: C', 'C'],
    ['FINAL ANSWER: (B) London', 'B'],
    ['FINAL ANSWER: B. London', 'B'],
    ['FINAL ANSWER: Option D', 'D'],
    ['FINAL ANSWER: London', 'B'], // an option's text
    ['FINAL ANSWER: london.', 'B'],
    ['London', 'B'],
    ['FINAL ANSWER: E', null], // beyond the options
    ['FINAL ANSWER: Berlin', null],
    ['FINAL ANSWER: a dog', 'D'], // lower-case "a" followed by words is not a letter: the option text
    ['I cannot decide between the options.', null],
    ['', null],
    ['   ', null],
  ])('%j → %j', (reply, letter) => {
    expect(readChoice(reply, options).letter).toBe(letter);
  });

  it('a FINAL ANSWER line decides even when an earlier answer line names another letter', () => {
    expect(readChoice('Answer: A\nFINAL ANSWER: C', options).letter).toBe('C');
  });
});

describe('gradeAnswer', () => {
  it('exact: trimmed, case counts', () => {
    const g: Grading = { expected: 'Paris', grader: { type: 'exact' } };
    expect(verdictOf('FINAL ANSWER: Paris', g)).toBe('correct');
    expect(verdictOf('  Paris  ', g)).toBe('correct');
    expect(verdictOf('FINAL ANSWER: paris', g)).toBe('incorrect');
    expect(verdictOf('', g)).toBe('unreadable');
    expect(
      verdictOf('Paris', { expected: 'Paris', grader: { type: 'exact', extract: 'final-answer' } }),
    ).toBe('unreadable');
  });

  it('normalized: case, punctuation, whitespace and NFKC do not count', () => {
    const g: Grading = { expected: 'New York City', grader: { type: 'normalized' } };
    expect(verdictOf('FINAL ANSWER: new  york city.', g)).toBe('correct');
    expect(verdictOf('FINAL ANSWER: Ｎｅｗ Ｙｏｒｋ Ｃｉｔｙ', g)).toBe('correct');
    expect(verdictOf('FINAL ANSWER: New York', g)).toBe('incorrect');
    expect(verdictOf('FINAL ANSWER: ...', g)).toBe('unreadable');
    expect(verdictOf('\n \t', g)).toBe('unreadable');
  });

  it('contains: whole words, normalized unless caseSensitive', () => {
    const g: Grading = { expected: 'Paris', grader: { type: 'contains' } };
    expect(verdictOf('I am sure it is PARIS, France.', g)).toBe('correct');
    expect(verdictOf('Parisian food', g)).toBe('incorrect');
    const four: Grading = { expected: '4', grader: { type: 'contains' } };
    expect(verdictOf('It is 14.', four)).toBe('incorrect');
    expect(verdictOf('It is 4.', four)).toBe('correct');
    const sensitive: Grading = { expected: 'Paris', grader: { type: 'contains', caseSensitive: true } };
    expect(verdictOf('paris', sensitive)).toBe('incorrect');
    expect(verdictOf('in Paris today', sensitive)).toBe('correct');
    expect(verdictOf('It is Paris.', sensitive)).toBe('correct'); // punctuation still goes
    expect(verdictOf('It is PARIS.', sensitive)).toBe('incorrect');
  });

  it('choice: the letter against the expected letter, unreadable when none', () => {
    const g: Grading = { expected: 'B', grader: { type: 'choice', options: ['x', 'y', 'z', 'w'] } };
    expect(gradeAnswer('FINAL ANSWER: (B)', local(g))).toMatchObject({ verdict: 'correct', extracted: 'B' });
    expect(verdictOf('Answer: C', g)).toBe('incorrect');
    expect(verdictOf('FINAL ANSWER: F', g)).toBe('unreadable');
    expect(verdictOf('no idea', g)).toBe('unreadable');
  });

  it('numeric: tolerance absolute and relative, last number by default', () => {
    const exact: Grading = { expected: 1234.5, grader: { type: 'numeric' } };
    expect(verdictOf('So it is 1,234.5', exact)).toBe('correct');
    expect(verdictOf('Steps: 3, 4, then $1,234.50.', exact)).toBe('correct');
    expect(verdictOf('1234.6', exact)).toBe('incorrect');
    expect(verdictOf('no digits here', exact)).toBe('unreadable');
    const abs: Grading = { expected: 10, grader: { type: 'numeric', absoluteTolerance: 0.5 } };
    expect(verdictOf('10.5', abs)).toBe('correct');
    expect(verdictOf('10.6', abs)).toBe('incorrect');
    const rel: Grading = { expected: 200, grader: { type: 'numeric', relativeTolerance: 0.01 } };
    expect(verdictOf('about 198', rel)).toBe('correct');
    expect(verdictOf('about 197', rel)).toBe('incorrect');
    const both: Grading = {
      expected: 0,
      grader: { type: 'numeric', absoluteTolerance: 0.001, relativeTolerance: 0.5 },
    };
    expect(verdictOf('0.0005', both)).toBe('correct');
  });

  it('numeric: the FINAL ANSWER line, when there is one, is where the number is read', () => {
    const g: Grading = { expected: 42, grader: { type: 'numeric' } };
    expect(verdictOf('FINAL ANSWER: 42\nChecked in 3 steps.', g)).toBe('correct');
    expect(verdictOf('FINAL ANSWER: none\n42', g)).toBe('unreadable');
    const last: Grading = { expected: 42, grader: { type: 'numeric', extract: 'last-number' } };
    expect(verdictOf('FINAL ANSWER: 42\nChecked in 3 steps.', last)).toBe('incorrect');
    const line: Grading = { expected: 42, grader: { type: 'numeric', extract: 'final-answer' } };
    expect(verdictOf('42', line)).toBe('unreadable');
    expect(verdictOf('-42%', { expected: -42, grader: { type: 'numeric' } })).toBe('correct');
    expect(verdictOf('1e3', { expected: 1000, grader: { type: 'numeric' } })).toBe('correct');
  });

  it('regex without a group matches; with a group extracts and compares normalized', () => {
    const match: Grading = {
      expected: null,
      grader: { type: 'regex', pattern: '^(?:NYC|New York)$', flags: 'i' },
    };
    expect(verdictOf('FINAL ANSWER: nyc', match)).toBe('correct');
    expect(verdictOf('FINAL ANSWER: Boston', match)).toBe('incorrect');
    expect(verdictOf('', match)).toBe('unreadable');
    const group: Grading = {
      expected: 'Paris',
      grader: { type: 'regex', pattern: 'capital is ([A-Za-z]+)', group: 1 },
    };
    expect(gradeAnswer('The capital is paris.', local(group))).toMatchObject({
      verdict: 'correct',
      extracted: 'paris',
    });
    expect(verdictOf('The capital is Rome', group)).toBe('incorrect');
    expect(verdictOf('I do not know', group)).toBe('unreadable');
    const named: Grading = {
      expected: '7',
      grader: { type: 'regex', pattern: 'x = (?<x>\\d+)|y = (?<y>\\d+)', group: 'x' },
    };
    expect(verdictOf('x = 7', named)).toBe('correct');
    expect(verdictOf('y = 7', named)).toBe('unreadable'); // the group took no part in the match
  });

  it('every grade names its grader', () => {
    const g: Grading = { expected: 'a', grader: { type: 'normalized' } };
    expect(gradeAnswer('a', local(g)).grader).toBe('normalized');
  });

  it('the model grader is not local', () => {
    expect(isLocalGrading({ expected: 'x', grader: { type: 'model', judges: ['sim/a'] } })).toBe(false);
  });
});

describe('the numeric grader’s reason', () => {
  const numeric: Grading = { expected: 504, grader: { type: 'numeric' } };
  it('names the number as written, and its value only where the two differ', () => {
    expect(gradeAnswer('FINAL ANSWER: 467', local(numeric)).reason).toBe(
      'read 467 from the FINAL ANSWER: line; expected 504, off by 37',
    );
    expect(gradeAnswer('About 1,234.5 in all', local(numeric)).reason).toBe(
      'read 1,234.5 (1234.5) from the reply; expected 504, off by 730.5',
    );
  });
});

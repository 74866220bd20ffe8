import { checkGrading } from './validate';

const fieldsOf = (raw: { expected?: unknown; grader?: unknown }) => {
  const check = checkGrading(raw);
  if (check.ok) throw new Error(`accepted: ${JSON.stringify(check.grading)}`);
  return check.fields;
};
const gradingOf = (raw: { expected?: unknown; grader?: unknown }) => {
  const check = checkGrading(raw);
  if (!check.ok) throw new Error(`refused: ${JSON.stringify(check.fields)}`);
  return check.grading;
};

describe('checkGrading', () => {
  it('neither field: no grading', () => {
    expect(gradingOf({})).toBeNull();
    expect(gradingOf({ expected: null, grader: null })).toBeNull();
  });

  it('expected alone: numeric for a number, normalized for text', () => {
    expect(gradingOf({ expected: 42 })).toEqual({ expected: 42, grader: { type: 'numeric' } });
    expect(gradingOf({ expected: '  Paris ' })).toEqual({
      expected: 'Paris',
      grader: { type: 'normalized' },
    });
  });

  it('a grader without expected is refused, naming expected', () => {
    for (const grader of [
      { type: 'exact' },
      { type: 'normalized' },
      { type: 'contains' },
      { type: 'numeric' },
      { type: 'choice', options: ['a', 'b'] },
      { type: 'regex', pattern: '(\\d+)', group: 1 },
      { type: 'model', judges: ['sim/judge'] },
    ]) {
      expect(fieldsOf({ grader }).expected).toMatch(/^expected is required with a \w+ grader/);
    }
    expect(fieldsOf({ expected: '   ', grader: { type: 'exact' } }).expected).toBe(
      'expected must not be empty',
    );
  });

  it('a regex without a group needs no expected answer', () => {
    expect(gradingOf({ grader: { type: 'regex', pattern: '^paris$', flags: 'i' } })).toEqual({
      expected: null,
      grader: { type: 'regex', pattern: '^paris$', flags: 'i' },
    });
  });

  it('expected of the wrong kind', () => {
    expect(fieldsOf({ expected: true }).expected).toMatch(/text or a number/);
    expect(fieldsOf({ expected: ['a'] }).expected).toMatch(/text or a number/);
    expect(fieldsOf({ expected: Number.NaN }).expected).toMatch(/finite/);
    expect(fieldsOf({ expected: 'a\u0001b' }).expected).toMatch(/control characters/);
    expect(fieldsOf({ expected: 'x'.repeat(2001) }).expected).toMatch(/at most 2000/);
    expect(fieldsOf({ expected: '?!', grader: { type: 'normalized' } }).expected).toMatch(
      /letters or digits/,
    );
  });

  it('numeric: the expected answer must be a number, stored as one', () => {
    expect(fieldsOf({ expected: 'twelve', grader: { type: 'numeric' } }).expected).toMatch(
      /^for a numeric grader, expected must be a number .*got "twelve"/,
    );
    expect(fieldsOf({ expected: '3 apples', grader: { type: 'numeric' } }).expected).toBeDefined();
    expect(gradingOf({ expected: '1,234.5', grader: { type: 'numeric' } })?.expected).toBe(1234.5);
    expect(gradingOf({ expected: '$3', grader: { type: 'numeric' } })?.expected).toBe(3);
    expect(gradingOf({ expected: '42%', grader: { type: 'numeric', relativeTolerance: 0.1 } })).toEqual({
      expected: 42,
      grader: { type: 'numeric', relativeTolerance: 0.1 },
    });
    const bad = fieldsOf({
      expected: 1,
      grader: { type: 'numeric', absoluteTolerance: -1, relativeTolerance: '1' },
    });
    expect(bad['grader.absoluteTolerance']).toMatch(/at least 0/);
    expect(bad['grader.relativeTolerance']).toMatch(/at least 0/);
    expect(
      fieldsOf({ expected: 1, grader: { type: 'numeric', extract: 'whole' } })['grader.extract'],
    ).toMatch(/auto, final-answer, last-number/);
  });

  it('choice: a letter or one option text, stored as the letter; outside the options refused', () => {
    const grader = { type: 'choice', options: ['Paris', 'London', 'Rome', 'A dog'] };
    expect(gradingOf({ expected: 'b', grader })?.expected).toBe('B');
    expect(gradingOf({ expected: '(C)', grader })?.expected).toBe('C');
    expect(gradingOf({ expected: 'rome', grader })?.expected).toBe('C');
    expect(gradingOf({ expected: 'A dog', grader })?.expected).toBe('D');
    // A letter is a letter even where an option's text is one (as the dataset reader reads it).
    expect(gradingOf({ expected: 'a', grader: { type: 'choice', options: ['b', 'a'] } })?.expected).toBe('A');
    expect(gradingOf({ expected: 'c', grader: { type: 'choice', options: ['b', 'c'] } })?.expected).toBe('B');
    expect(fieldsOf({ expected: 'E', grader }).expected).toBe(
      `for a choice grader, expected must be one of the options' letters (A–D) or one option's text, got "E"`,
    );
    expect(fieldsOf({ expected: 'Berlin', grader }).expected).toMatch(/options' letters/);
    expect(fieldsOf({ expected: 2, grader }).expected).toMatch(/options' letters/);
    expect(
      fieldsOf({ expected: 'x', grader: { type: 'choice', options: ['x', 'X', 'y'] } }).expected,
    ).toMatch(/several options/);
    expect(
      fieldsOf({ expected: 'A', grader: { type: 'choice', options: ['only'] } })['grader.options'],
    ).toMatch(/2 to 26/);
    expect(fieldsOf({ expected: 'A', grader: { type: 'choice' } })['grader.options']).toBeDefined();
    expect(
      fieldsOf({ expected: 'A', grader: { type: 'choice', options: ['a', 3] } })['grader.options[1]'],
    ).toMatch(/must be text/);
    expect(
      fieldsOf({ expected: 'A', grader: { type: 'choice', options: ['a', ' '] } })['grader.options[1]'],
    ).toMatch(/must not be empty/);
  });

  it('regex: invalid, unsafe and badly flagged patterns are refused, naming grader.pattern or grader.flags', () => {
    const pattern = (p: string, extra: Record<string, unknown> = {}) =>
      fieldsOf({ expected: 'x', grader: { type: 'regex', pattern: p, group: 0, ...extra } });
    expect(pattern('(')['grader.pattern']).toMatch(/not a valid regular expression/);
    expect(pattern('(a+)+$')['grader.pattern']).toMatch(/repeated group/);
    expect(pattern('(a|ab)*c')['grader.pattern']).toMatch(/repeated group/);
    expect(pattern('(\\w)\\1')['grader.pattern']).toMatch(/backreferences/);
    expect(pattern('(?=a)a')['grader.pattern']).toMatch(/lookarounds/);
    expect(pattern('a', { flags: 'g' })['grader.flags']).toMatch(/flag g is not allowed/);
    expect(pattern('a', { flags: 'ii' })['grader.flags']).toMatch(/more than once/);
    expect(pattern('a', { group: 2 })['grader.group']).toMatch(/0 \(the whole match\) to 0/);
    expect(pattern('(?<n>a)', { group: 'm' })['grader.group']).toMatch(/\(n\)/);
    expect(pattern('a', { group: 1.5 })['grader.group']).toBeDefined();
    expect(fieldsOf({ grader: { type: 'regex' } })['grader.pattern']).toMatch(/regular expression, as text/);
    expect(
      gradingOf({ expected: '7', grader: { type: 'regex', pattern: '(?<n>\\d+)', group: 'n' } }),
    ).toEqual({
      expected: '7',
      grader: { type: 'regex', pattern: '(?<n>\\d+)', group: 'n' },
    });
  });

  it('model: 1 to 5 distinct model ids', () => {
    expect(gradingOf({ expected: 'Paris', grader: { type: 'model', judges: ['sim/a', 'sim/b'] } })).toEqual({
      expected: 'Paris',
      grader: { type: 'model', judges: ['sim/a', 'sim/b'] },
    });
    expect(fieldsOf({ expected: 'x', grader: { type: 'model', judges: [] } })['grader.judges']).toMatch(
      /1 to 5/,
    );
    expect(
      fieldsOf({ expected: 'x', grader: { type: 'model', judges: ['nope'] } })['grader.judges[0]'],
    ).toMatch(/provider\/name/);
    expect(
      fieldsOf({ expected: 'x', grader: { type: 'model', judges: ['sim/a', 'sim/a'] } })['grader.judges[1]'],
    ).toMatch(/already a judge/);
  });

  it('unknown types and fields are named', () => {
    expect(fieldsOf({ expected: 'x', grader: 'exact' }).grader).toMatch(/object with a type/);
    expect(fieldsOf({ expected: 'x', grader: { type: 'fuzzy' } })['grader.type']).toMatch(
      /one of exact, normalized/,
    );
    expect(fieldsOf({ expected: 'x', grader: {} })['grader.type']).toBeDefined();
    const unknown = fieldsOf({ expected: 'x', grader: { type: 'exact', options: [], __proto__: 1 } });
    expect(unknown['grader.options']).toMatch(/should not exist on a exact grader/);
    const proto = fieldsOf({ expected: 'x', grader: JSON.parse('{"type":"exact","__proto__":1}') });
    expect(Object.keys(proto)).toEqual(['grader.__proto__']);
    expect(fieldsOf({ expected: 'x', grader: { type: 'exact', extract: 'all' } })['grader.extract']).toMatch(
      /auto, final-answer, whole/,
    );
    expect(
      fieldsOf({ expected: 'x', grader: { type: 'contains', caseSensitive: 'yes' } })['grader.caseSensitive'],
    ).toBe('grader.caseSensitive must be true or false');
  });
});

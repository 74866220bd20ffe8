import { lastMatchBounded, REGEX_INPUT_MAX, REGEX_TIME_LIMIT_MS, regexSafetyProblem } from './regex-guard';

describe('regexSafetyProblem', () => {
  it.each([
    'Answer:\\s*(\\d+)',
    '^(?:NYC|New York)$',
    '(\\d+(?:\\.\\d+)?)',
    '[A-D]',
    '(?<letter>[A-D])\\)',
    '\\bparis\\b',
    '(?:ab)+',
    '(?:[a-z])*x',
    '(?:a){3}',
    'a{2,5}b',
    '\\p{L}+',
    '[(+*]+',
    '\\(a+\\)+',
  ])('accepts %j', (pattern) => {
    expect(regexSafetyProblem(pattern, pattern.includes('\\p') ? 'u' : '')).toBeNull();
  });

  it.each<[string, RegExp]>([
    ['(a+)+$', /repeated group/],
    ['(a*)*', /repeated group/],
    ['(?:\\w+\\s?)*$', /repeated group/],
    ['((a)?)+', /repeated group/],
    ['(a|a)*', /repeated group/],
    ['(a|ab)+c', /repeated group/],
    ['((a|b)c){2,}', /repeated group/],
    ['(?:x(?:a+))+', /repeated group/],
    ['(.*){1,10}', /repeated group/],
    ['(\\w)\\1', /backreferences/],
    ['(?<x>a)\\k<x>', /backreferences/],
    ['(?=a)a', /lookarounds/],
    ['(?!a)b', /lookarounds/],
    ['(?<=a)b', /lookarounds/],
    ['(?<!a)b', /lookarounds/],
    ['(', /not a valid regular expression/],
    ['a{2,1}', /not a valid regular expression/],
    ['', /empty/],
    ['a'.repeat(501), /at most 500/],
  ])('refuses %j', (pattern, why) => {
    expect(regexSafetyProblem(pattern)).toMatch(why);
  });

  it('refuses unknown and repeated flags', () => {
    expect(regexSafetyProblem('a', 'g')).toMatch(/flag g/);
    expect(regexSafetyProblem('a', 'y')).toMatch(/flag y/);
    expect(regexSafetyProblem('a', 'ii')).toMatch(/more than once/);
    expect(regexSafetyProblem('a', 'imsu')).toBeNull();
  });
});

describe('lastMatchBounded', () => {
  it('finds the last match, empty matches included', () => {
    const run = lastMatchBounded('(\\d+)', '', 'a 1 b 22 c 333 d');
    expect(run.ok && run.match?.[1]).toBe('333');
    const empty = lastMatchBounded('x*', '', 'abc');
    expect(empty.ok && empty.match?.[0]).toBe('');
    // Under the u flag an empty match moves on a whole surrogate pair (it once looped until the limit).
    const astral = lastMatchBounded('x*', 'u', '😀😀a😀');
    expect(astral.ok && astral.match?.index).toBe(7);
    const lone = lastMatchBounded('x*', '', '😀a');
    expect(lone.ok && lone.match?.index).toBe(3);
    const none = lastMatchBounded('z', '', 'abc');
    expect(none).toEqual({ ok: true, match: null });
  });

  it('reads only the last REGEX_INPUT_MAX characters', () => {
    const text = `needle${'.'.repeat(REGEX_INPUT_MAX)}`;
    expect(lastMatchBounded('needle', '', text)).toEqual({ ok: true, match: null });
    expect(lastMatchBounded('needle', '', `${text}needle`).ok).toBe(true);
  });

  it('stops a pattern that backtracks polynomially, within a few time limits', () => {
    // Allowed by the structural rules (no nesting), cubic on a long run of spaces.
    expect(regexSafetyProblem('\\s*\\s*\\s*x')).toBeNull();
    const started = Date.now();
    const run = lastMatchBounded('\\s*\\s*\\s*x', '', ' '.repeat(REGEX_INPUT_MAX));
    expect(run).toEqual({
      ok: false,
      reason: `the pattern took longer than ${REGEX_TIME_LIMIT_MS} ms on this answer`,
    });
    expect(Date.now() - started).toBeLessThan(REGEX_TIME_LIMIT_MS * 20);
    // The sandbox is usable again afterwards.
    const after = lastMatchBounded('(\\d+)', '', 'x 5');
    expect(after.ok && after.match?.[1]).toBe('5');
  });

  it('stops an exponential pattern if one were ever let through', () => {
    const run = lastMatchBounded('(a+)+$', '', `${'a'.repeat(40)}!`);
    expect(run.ok).toBe(false);
  });
});

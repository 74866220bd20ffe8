import { createContext, Script } from 'node:vm';
import { GRADER_PATTERN_MAX_LENGTH } from '@conclave/contracts';

/**
 * The regex grader's guard against catastrophic backtracking (JavaScript's engine backtracks, so a
 * pattern such as `(a+)+$` takes exponential time on `aaaa…!`). Three layers:
 *
 * 1. **Refused when the request is validated** (`regexSafetyProblem`): a pattern longer than
 *    GRADER_PATTERN_MAX_LENGTH; one that does not compile; backreferences (`\1`, `\k<name>`);
 *    lookarounds (`(?=`, `(?!`, `(?<=`, `(?<!`); and a repeated group (`*`, `+`, `{n,}`, `{n,m}` with
 *    m > 1) that contains a quantifier or an alternation, at any depth (`(a+)+`, `(a|ab)*`,
 *    `(?:\w+\s?)*`, `((a)?)*`). Flags other than `i`, `m`, `s`, `u` are refused.
 * 2. **Input capped**: the pattern runs on the last REGEX_INPUT_MAX characters of the text it is
 *    given (the final answer is at the end of a reply).
 * 3. **Time bounded**: the matching runs under a REGEX_TIME_LIMIT_MS limit (node:vm's timeout, which
 *    interrupts the engine); a pattern that exceeds it grades the answer `unreadable`, saying so.
 *    Polynomial backtracking (`.*.*.*x`), which the structural rules do not catch, is what this
 *    bounds.
 */
export const REGEX_INPUT_MAX = 2000;
export const REGEX_TIME_LIMIT_MS = 100;
export const REGEX_FLAGS = ['i', 'm', 's', 'u'] as const;

interface GroupState {
  /** A quantifier or an alternation somewhere inside. */
  quantified: boolean;
  alternation: boolean;
}

/** The quantifier at `i`, if any: its length and whether it repeats more than once. */
function quantifierAt(p: string, i: number): { length: number; repeats: boolean; variable: boolean } | null {
  const c = p[i];
  let length = 0;
  let repeats = false;
  let variable = false;
  if (c === '*' || c === '+') {
    length = 1;
    repeats = true;
    variable = true;
  } else if (c === '?') {
    length = 1;
    variable = true;
  } else if (c === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i, i + 24));
    if (!m) return null;
    length = m[0].length;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    repeats = max > 1;
    variable = max !== min;
  } else return null;
  if (p[i + length] === '?') length++;
  return { length, repeats, variable };
}

/** Why flags are refused, or null: any of `i`, `m`, `s`, `u`, each at most once. */
export function regexFlagsProblem(flags: string): string | null {
  for (const flag of flags) {
    if (!(REGEX_FLAGS as readonly string[]).includes(flag))
      return `flag ${flag} is not allowed (use any of ${REGEX_FLAGS.join(', ')})`;
  }
  if (new Set(flags).size !== flags.length) return 'a flag is given more than once';
  return null;
}

/** Why a pattern is refused (a sentence for the 400), or null when it may be used. */
export function regexSafetyProblem(pattern: string, flags = ''): string | null {
  if (pattern.length === 0) return 'the pattern is empty';
  if (pattern.length > GRADER_PATTERN_MAX_LENGTH)
    return `the pattern must be at most ${GRADER_PATTERN_MAX_LENGTH} characters (got ${pattern.length})`;
  const flagProblem = regexFlagsProblem(flags);
  if (flagProblem !== null) return flagProblem;
  try {
    new RegExp(pattern, flags);
  } catch (error) {
    return `the pattern is not a valid regular expression: ${(error as Error).message}`;
  }
  const stack: GroupState[] = [{ quantified: false, alternation: false }];
  const p = pattern;
  let i = 0;
  while (i < p.length) {
    const c = p[i];
    let atomEnd = i + 1;
    if (c === '\\') {
      const next = p[i + 1];
      if (next !== undefined && next >= '1' && next <= '9')
        return 'backreferences (\\1, \\2, …) are not allowed: they can take exponential time';
      if (next === 'k' && p[i + 2] === '<')
        return 'backreferences (\\k<name>) are not allowed: they can take exponential time';
      atomEnd = i + 2;
      if ((next === 'p' || next === 'P' || next === 'u') && p[i + 2] === '{') {
        const close = p.indexOf('}', i + 3);
        if (close > 0) atomEnd = close + 1;
      }
    } else if (c === '[') {
      let j = i + 1;
      if (p[j] === '^') j++;
      if (p[j] === ']') j++;
      while (j < p.length && p[j] !== ']') j += p[j] === '\\' ? 2 : 1;
      atomEnd = j + 1;
    } else if (c === '(') {
      if (
        p.startsWith('(?=', i) ||
        p.startsWith('(?!', i) ||
        p.startsWith('(?<=', i) ||
        p.startsWith('(?<!', i)
      )
        return 'lookarounds ((?=, (?!, (?<=, (?<!) are not allowed';
      stack.push({ quantified: false, alternation: false });
      if (p.startsWith('(?:', i)) i += 3;
      else if (p.startsWith('(?<', i)) i = p.indexOf('>', i) + 1;
      else i += 1;
      continue;
    } else if (c === ')') {
      const group = stack.pop();
      if (group === undefined || stack.length === 0) return 'the pattern has an unbalanced parenthesis';
      const q = quantifierAt(p, i + 1);
      if (q?.repeats && (group.quantified || group.alternation)) {
        return 'a repeated group may not contain a quantifier or an alternation (| ): patterns such as (a+)+ or (a|ab)* can take exponential time';
      }
      const parent = stack[stack.length - 1];
      parent.quantified ||= group.quantified || (q?.variable ?? false) || (q?.repeats ?? false);
      parent.alternation ||= group.alternation;
      i += 1 + (q?.length ?? 0);
      continue;
    } else if (c === '|') {
      stack[stack.length - 1].alternation = true;
      i++;
      continue;
    }
    const q = quantifierAt(p, atomEnd);
    if (q && (q.variable || q.repeats)) stack[stack.length - 1].quantified = true;
    i = atomEnd + (q?.length ?? 0);
  }
  return null;
}

const sandbox = createContext({});
// After an empty match the search moves on one character: under the `u` flag a whole surrogate
// pair (the engine steps back into a pair it is put in the middle of, which would loop forever).
const LAST_MATCH = new Script(
  'last = null; re.lastIndex = 0;' +
    'while ((m = re.exec(s)) !== null) {' +
    ' last = m;' +
    ' if (m[0] === "") {' +
    '  var i = re.lastIndex, c = s.charCodeAt(i), d = s.charCodeAt(i + 1);' +
    '  re.lastIndex = i + (re.unicode && c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1);' +
    ' }' +
    '}',
);

export type BoundedMatch = { ok: true; match: RegExpExecArray | null } | { ok: false; reason: string };

/**
 * The pattern's last match in the last REGEX_INPUT_MAX characters of `text`, within
 * REGEX_TIME_LIMIT_MS. The pattern must have passed regexSafetyProblem.
 */
export function lastMatchBounded(pattern: string, flags: string, text: string): BoundedMatch {
  const input = text.length > REGEX_INPUT_MAX ? text.slice(text.length - REGEX_INPUT_MAX) : text;
  const re = new RegExp(pattern, `${flags.replace('g', '')}g`);
  const scope = sandbox as { re?: RegExp; s?: string; m?: unknown; last?: RegExpExecArray | null };
  scope.re = re;
  scope.s = input;
  try {
    LAST_MATCH.runInContext(sandbox, { timeout: REGEX_TIME_LIMIT_MS });
    return { ok: true, match: scope.last ?? null };
  } catch {
    return { ok: false, reason: `the pattern took longer than ${REGEX_TIME_LIMIT_MS} ms on this answer` };
  } finally {
    scope.re = undefined;
    scope.s = undefined;
    scope.m = undefined;
    scope.last = null;
  }
}

/**
 * Reading a final answer out of free text, and the normalization text graders compare under.
 * Every function here is linear in the text's length: no pattern with adjacent optional parts is
 * run over a whole reply (a model that prints a million spaces must not stall a worker).
 */

const WHITESPACE = /[\s\p{Z}]/u;
const PUNCTUATION = /\p{P}/u;
const DIGIT = /[0-9]/;

/**
 * The text graders' normalization (the `normalized` and `contains` graders, the regex grader's
 * comparison of a captured group):
 * 1. Unicode NFKC (full-width letters and digits, ligatures and compatibility forms fold to their
 *    plain equivalents), then lower case (locale-independent), then NFKC again;
 * 2. punctuation (Unicode category P) removed, except `.` and `,` between two digits (3.5 stays
 *    3.5, never 35);
 * 3. whitespace runs (including Unicode spaces) become one space, trimmed at both ends.
 * Accents are kept (é is not e), and so are symbols (`$`, `%`, `+`); articles are not removed.
 * `keepCase` skips the lower-casing (the `contains` grader's `caseSensitive`).
 */
export function normalizeText(text: string, keepCase = false): string {
  const folded = text.normalize('NFKC');
  const chars = Array.from(keepCase ? folded : folded.toLowerCase().normalize('NFKC'));
  let out = '';
  let space = false;
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (WHITESPACE.test(c)) {
      space = out.length > 0;
      continue;
    }
    if (PUNCTUATION.test(c)) {
      const betweenDigits =
        (c === '.' || c === ',') &&
        i > 0 &&
        i + 1 < chars.length &&
        DIGIT.test(chars[i - 1]) &&
        DIGIT.test(chars[i + 1]);
      if (!betweenDigits) continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

/** Characters that wrap an answer in Markdown or quotes, removed from both ends of a final answer. */
const WRAPPERS = new Set(['*', '_', '`', '"', "'", '“', '”', '‘', '’', '«', '»']);

/**
 * A final answer without what wraps it: surrounding whitespace, Markdown emphasis and backticks,
 * quotes, `$…$` and LaTeX `\boxed{…}` / `\text{…}` (outermost first, repeatedly).
 */
export function unwrapAnswer(text: string): string {
  let s = text.trim();
  for (let round = 0; round < 8; round++) {
    const before = s;
    let start = 0;
    let end = s.length;
    while (start < end && WRAPPERS.has(s[start])) start++;
    while (end > start && WRAPPERS.has(s[end - 1])) end--;
    s = s.slice(start, end).trim();
    if (s.length >= 2 && s.startsWith('$') && s.endsWith('$')) {
      let a = 0;
      let b = s.length;
      while (a < b && s[a] === '$') a++;
      while (b > a && s[b - 1] === '$') b--;
      s = s.slice(a, b).trim();
    }
    for (const command of ['\\boxed{', '\\text{', '\\mathrm{']) {
      if (s.startsWith(command) && s.endsWith('}')) s = s.slice(command.length, -1).trim();
    }
    if (s === before) break;
  }
  return s;
}

/** Characters a line may start with before its label: Markdown headings, emphasis, bullets. */
const LINE_MARKUP = new Set(['*', '_', '#', '-', '•', '`']);

/**
 * The text after a label such as `FINAL ANSWER:` when `line` is such a line (any letter case,
 * Markdown before it and around the colon, `FINAL_ANSWER` too); null otherwise. `words` are the
 * label's words in lower case.
 */
export function afterLabel(line: string, words: readonly string[]): string | null {
  const s = line.normalize('NFKC');
  let i = 0;
  const n = s.length;
  const skipSpaces = () => {
    while (i < n && WHITESPACE.test(s[i])) i++;
  };
  skipSpaces();
  // A quoted line (`> …`) is someone else's text, never the reply's own answer.
  if (s[i] === '>') return null;
  while (i < n && (LINE_MARKUP.has(s[i]) || WHITESPACE.test(s[i]))) i++;
  for (let w = 0; w < words.length; w++) {
    const word = words[w];
    if (s.slice(i, i + word.length).toLowerCase() !== word) return null;
    i += word.length;
    if (w < words.length - 1) {
      const from = i;
      while (i < n && (s[i] === ' ' || s[i] === '\t' || s[i] === '_')) i++;
      if (i === from) return null;
    }
  }
  while (i < n && (s[i] === '*' || s[i] === '_' || s[i] === ' ' || s[i] === '\t')) i++;
  if (s[i] !== ':') return null;
  return s.slice(i + 1);
}

const FINAL_ANSWER = ['final', 'answer'];

/**
 * The reply's last `FINAL ANSWER:` line's answer (unwrapped); when the label stands alone on its
 * line, the next non-empty line is the answer. Null when the reply has no such line, or its last
 * one gives nothing.
 */
export function finalAnswerLine(text: string): string | null {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const rest = afterLabel(lines[i], FINAL_ANSWER);
    if (rest === null) continue;
    let answer = unwrapAnswer(rest);
    for (let j = i + 1; answer === '' && j < lines.length; j++) answer = unwrapAnswer(lines[j]);
    return answer === '' ? null : answer;
  }
  return null;
}

export type TextSource = { text: string; from: 'final-answer' | 'whole' } | { text: null; reason: string };

/** Where a text grader reads its answer (TextExtraction): see libs/contracts/src/grading.ts. */
export function extractAnswerText(reply: string, how: 'auto' | 'final-answer' | 'whole'): TextSource {
  if (how !== 'whole') {
    const line = finalAnswerLine(reply);
    if (line !== null) return { text: line, from: 'final-answer' };
    if (how === 'final-answer') return { text: null, reason: 'the reply has no FINAL ANSWER: line' };
  }
  const whole = reply.trim();
  if (whole === '') return { text: null, reason: 'the reply is empty' };
  return { text: whole, from: 'whole' };
}

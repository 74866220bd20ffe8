import { afterLabel, finalAnswerLine, normalizeText, unwrapAnswer } from './text';

/** Option i's letter: A, B, C… */
export const choiceLetter = (index: number): string => String.fromCharCode(65 + index);

/**
 * The letter a short answer names, or null: `B`, `b`, `(B)`, `[B]`, `B)`, `B.`, `B:`, `(B) Paris`,
 * `B. Paris`, `B) Paris`, `B - Paris`, `Option B`, `Choice (b)`, an upper-case `B` followed by a
 * space and more text (`B because…`); or, when it is none of those, the text of exactly one option
 * (compared normalized, see normalizeText). A lower-case letter counts only on its own or with its
 * bracket or punctuation (`a dog` is not a choice).
 */
export function letterIn(candidate: string, options: readonly string[]): string | null {
  let s = unwrapAnswer(candidate);
  const prefix = /^(?:option|choice)[ \t]/i.exec(s);
  if (prefix) s = s.slice(prefix[0].length).trimStart();
  const bracketed = /^[([]([A-Za-z])[)\]](?:$|[ \t.:,;]|\s)/.exec(s);
  const letter =
    bracketed?.[1] ??
    /^([A-Za-z])[.:),;]?$/.exec(s)?.[1] ??
    /^([A-Za-z])[.:),](?:[ \t]|$)/.exec(s)?.[1] ??
    /^([A-Z])[ \t]+(?:[-–—][ \t]+)?\S/.exec(s)?.[1] ??
    null;
  if (letter !== null) return letter.toUpperCase();
  const normalized = normalizeText(s);
  if (normalized === '') return null;
  const matches = options.map((o, i) => (normalizeText(o) === normalized ? i : -1)).filter((i) => i >= 0);
  return matches.length === 1 ? choiceLetter(matches[0]) : null;
}

export type ChoiceReading = { letter: string; from: string } | { letter: null; reason: string };

const ANSWER = ['answer'];
const ANSWER_IS = /\banswer(?:[ \t]+is)?[ \t]*:?[ \t]*/gi;

/**
 * The letter a reply chooses. Looked for, in order:
 * 1. the last `FINAL ANSWER:` line (when there is one, it alone decides);
 * 2. the last line with `Answer:` or `the answer is …` (the text after it);
 * 3. the whole reply, when it is a letter alone (`B`, `(B)`, `**B**`) or one option's text.
 * A letter beyond the options (E of four) is not a choice: unreadable, never incorrect.
 */
export function readChoice(reply: string, options: readonly string[]): ChoiceReading {
  const inRange = (letter: string | null, from: string): ChoiceReading => {
    if (letter === null) return { letter: null, reason: `no choice letter could be read from ${from}` };
    const index = letter.charCodeAt(0) - 65;
    if (index >= options.length) {
      return {
        letter: null,
        reason: `${from} names ${letter}, which is not one of the options A–${choiceLetter(options.length - 1)}`,
      };
    }
    return { letter, from };
  };
  const final = finalAnswerLine(reply);
  if (final !== null) return inRange(letterIn(final, options), 'the FINAL ANSWER: line');
  const lines = reply.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i];
    if (line.length > 2000 || !/answer/i.test(line)) continue;
    const labelled = afterLabel(line, ANSWER);
    const candidates: string[] = [];
    if (labelled !== null) candidates.push(labelled);
    ANSWER_IS.lastIndex = 0;
    let match: RegExpExecArray | null;
    let last: string | null = null;
    while ((match = ANSWER_IS.exec(line)) !== null) last = line.slice(match.index + match[0].length);
    if (last !== null) candidates.push(last);
    for (const candidate of candidates) {
      const letter = letterIn(candidate, options);
      if (letter !== null) return inRange(letter, 'the answer line');
    }
  }
  const whole = reply.trim();
  if (whole.length > 0 && whole.length <= 200) return inRange(letterIn(whole, options), 'the reply');
  return { letter: null, reason: 'no choice letter could be read from the reply' };
}

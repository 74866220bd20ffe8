import { hashString, seededRandom } from '@conclave/llm';

/**
 * Simulated accuracy (issue 37 item 5): in a graded run the simulated provider is told the item's
 * expected answer (`CompletionRequest.expected`, never sent to a real model), and a simulated
 * member is then right with the probability its `acc<N>` directive gives, deterministically per
 * item (the question's text), `SIM_SEED` and the member's name, independently across names.
 * Otherwise it gives a plausible wrong answer of its own. A chairman, voter or reviser treats the
 * answers it is shown as `follow` (the strict majority's answer, else its own), `keep` (its own)
 * or `random` (one of the shown answers, uniformly) says; the default is `follow`.
 *
 * So expected panel accuracy is known in closed form: three independent members right with
 * probability p under a following chairman whose own answer is wrong (no `acc<N>`: acc0) are
 * right with probability p³ + 3p²(1 − p) (0.784 for p = 0.7); a `random` chairman with p; a
 * `keep` chairman with its own accuracy.
 *
 * Without an expected answer none of this applies and every responder answers as before.
 * Plain functions: the responders (council.sim.ts, debate.sim.ts, simulation.ts, vote.sim.ts) call
 * them, and the tests check the figures here without a provider.
 */

/** The line every simulated answer of a graded run ends with, for graders to read. */
export const FINAL_ANSWER_PREFIX = 'FINAL ANSWER:';

export type AnswerBehaviour = 'follow' | 'keep' | 'random';
const BEHAVIOURS: readonly AnswerBehaviour[] = ['follow', 'keep', 'random'];

/** The probability (0–1) an `acc<N>` flag gives (N from 0 to 100); 0 without one. */
export function accuracyOf(flags: readonly string[]): number {
  for (const flag of flags) {
    const match = /^acc(\d{1,3})$/.exec(flag);
    if (match && Number(match[1]) <= 100) return Number(match[1]) / 100;
  }
  return 0;
}

/** The behaviour a flag names (`follow`, `keep`, `random`), or null when none does. */
export function behaviourOf(flags: readonly string[]): AnswerBehaviour | null {
  return BEHAVIOURS.find((b) => flags.includes(b)) ?? null;
}

/** Who answers what: the seed, the member's name (persona) and the item (its question). */
export interface SimulatedItem {
  seed: string;
  persona: string;
  question: string;
  expected: string;
}

/** A uniform number in [0, 1) for one purpose, the same for the same seed, name and question. */
function draw(item: Omit<SimulatedItem, 'expected'>, purpose: string): () => number {
  return seededRandom(hashString(`${item.seed}|${purpose}|${item.persona}|${item.question.trim()}`));
}

/** Whether this member is right on this item, with probability `accuracy`. */
export function isRightOn(item: Omit<SimulatedItem, 'expected'>, accuracy: number): boolean {
  return draw(item, 'accuracy')() < accuracy;
}

const NUMBER = /^-?\d+(?:\.(\d+))?$/;
const LETTER = /^[A-Z]$/;
/** A choice letter at the start of a line of the question: `A)`, `(B)`, `C.`, `D:`. */
const OPTION_LINE = /^[ \t]*\(?([A-Z])[).:][ \t]/gm;
/** Wrong answers to a text question: none is a word a typical expected answer contains. */
const DISTRACTORS = [
  'none of the above',
  'it cannot be determined',
  'zero',
  'twice as many',
  'half as much',
  'the second option',
  'the first option',
  'more than expected',
  'less than expected',
  'roughly equal',
  'not enough information',
  'the opposite',
];

/**
 * A plausible wrong answer, different for each member as far as the answer's kind allows: a
 * number near the expected one (1 to 40 units of its last decimal away, the same sign when it is
 * not negative), another choice letter (among those the question lists, else A–D), or a
 * distractor phrase. Two members' wrong numbers coincide on one item in 80 (in 40 below 40); letters often
 * do, as they would in a real panel with four options.
 */
export function wrongAnswer(item: SimulatedItem): string {
  const random = draw(item, 'wrong');
  const expected = item.expected.trim();
  const number = NUMBER.exec(expected);
  if (number) {
    const decimals = number[1]?.length ?? 0;
    const unit = 10 ** -decimals;
    const value = Number(expected);
    const steps = 1 + Math.floor(random() * 40);
    const down = random() < 0.5 && (value < 0 || value - steps * unit >= 0);
    return (value + (down ? -steps : steps) * unit).toFixed(decimals);
  }
  if (LETTER.test(expected)) {
    const listed = [...new Set([...item.question.matchAll(OPTION_LINE)].map((m) => m[1]))];
    const options = listed.length >= 2 ? listed : ['A', 'B', 'C', 'D'];
    const others = options.filter((o) => o !== expected);
    return others.length > 0 ? others[Math.floor(random() * others.length)] : expected === 'A' ? 'B' : 'A';
  }
  const others = DISTRACTORS.filter((d) => normalised(d) !== normalised(expected));
  return others[Math.floor(random() * others.length)];
}

/** The answer this member gives on its own: the expected one with probability `accuracy`. */
export function ownAnswer(item: SimulatedItem, accuracy: number): string {
  return isRightOn(item, accuracy) ? item.expected.trim() : wrongAnswer(item);
}

const normalised = (answer: string): string => answer.trim().replace(/\s+/g, ' ').toLowerCase();

/** The last `FINAL ANSWER:` line's answer in a text, or null when it has none. */
export function finalAnswerOf(text: string): string | null {
  let found: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.toUpperCase().startsWith(FINAL_ANSWER_PREFIX)) {
      const answer = trimmed.slice(FINAL_ANSWER_PREFIX.length).trim();
      if (answer !== '') found = answer;
    }
  }
  return found;
}

/**
 * The answer more than half of `answers` give (unreadable ones, null, count in the whole but
 * never win), compared after trimming, folding case and white space; null when none has a strict
 * majority. The answer is returned as the first that gave it wrote it.
 */
export function majorityAnswer(answers: readonly (string | null)[]): string | null {
  const counts = new Map<string, { answer: string; count: number }>();
  for (const answer of answers) {
    if (answer === null) continue;
    const key = normalised(answer);
    const entry = counts.get(key) ?? { answer: answer.trim(), count: 0 };
    entry.count += 1;
    counts.set(key, entry);
  }
  for (const entry of counts.values()) if (entry.count * 2 > answers.length) return entry.answer;
  return null;
}

/** Whether two answers are the same after trimming, folding case and white space. */
export const sameAnswer = (a: string | null, b: string | null): boolean =>
  a !== null && b !== null && normalised(a) === normalised(b);

/**
 * What a chairman, voter or reviser answers, given the answers it is shown (null: unreadable)
 * and its own: `follow` the strict majority's answer, else its own; `keep` its own; `random` one
 * of the readable shown answers, uniformly by `random()` (its own when none is readable).
 */
export function answerToward(
  behaviour: AnswerBehaviour,
  shown: readonly (string | null)[],
  own: string,
  random: () => number,
): string {
  if (behaviour === 'keep') return own;
  if (behaviour === 'follow') return majorityAnswer(shown) ?? own;
  const readable = shown.filter((a): a is string => a !== null);
  return readable.length > 0 ? readable[Math.floor(random() * readable.length)] : own;
}

/**
 * A random source for a `random` pick that depends only on the seed, the member, the item and
 * the answers shown (not on the prompt's fences, which differ per deliberation), so a run repeats.
 */
export function pickRandom(
  item: Omit<SimulatedItem, 'expected'>,
  shown: readonly (string | null)[],
): () => number {
  return draw(item, `pick|${shown.map((a) => a ?? '').join('|')}`);
}

/** `text` without its `FINAL ANSWER:` lines, then one with `answer` as its last line. */
export function withFinalAnswer(text: string, answer: string): string {
  const body = text
    .split('\n')
    .filter((line) => !line.trim().toUpperCase().startsWith(FINAL_ANSWER_PREFIX))
    .join('\n')
    .trimEnd();
  return `${body}\n\n${FINAL_ANSWER_PREFIX} ${answer}`;
}

/**
 * A numeric expected answer as Delphi's simulated panelists use it: its value and how many
 * decimals it is written with (its unit is 10^-decimals); null when it is not a finite number.
 */
export function numericExpected(expected: string): { value: number; decimals: number } | null {
  const text = expected.trim();
  const value = Number(text);
  if (text === '' || !Number.isFinite(value)) return null;
  const plain = NUMBER.exec(text);
  const decimals = plain ? (plain[1]?.length ?? 0) : Number.isInteger(value) ? 0 : 6;
  return { value, decimals };
}

const toDecimals = (value: number, decimals: number): number => Number(value.toFixed(decimals));

/**
 * A Delphi panelist's plausible off estimate for a numeric item: 5–50 % away from the expected
 * value (1 to 40 units of its last decimal when it is 0), never closer than one unit. All the
 * panelists who are off on one item err on the same side of it (a shared misconception, drawn per
 * item; above a 0 or below a positive value only down to 0), so the panel's median is the
 * expected value exactly when a strict majority has it.
 */
export function offEstimate(item: SimulatedItem, expected: { value: number; decimals: number }): number {
  const { value, decimals } = expected;
  const unit = 10 ** -decimals;
  const random = draw(item, 'delphi-off');
  const below = value !== 0 && draw({ ...item, persona: '' }, 'delphi-side')() < 0.5;
  const r = random();
  const delta =
    value === 0
      ? (1 + Math.floor(r * 40)) * unit
      : Math.max(unit, toDecimals(Math.abs(value) * (0.05 + 0.45 * r), decimals));
  return toDecimals(below ? value - delta : value + delta, decimals);
}

/** A Delphi panelist's first estimate: the expected value with probability `accuracy`. */
export function ownEstimate(
  item: SimulatedItem,
  expected: { value: number; decimals: number },
  accuracy: number,
): number {
  return isRightOn(item, accuracy) ? expected.value : offEstimate(item, expected);
}

/**
 * A Delphi panelist's later estimate: 80 % of the way from its previous one to the panel's
 * median, at the expected value's decimals. One already at the median stays, and nobody crosses
 * it, so (with an odd panel) the median never moves after the first round.
 */
export function towardMedian(previous: number, median: number, decimals: number): number {
  return toDecimals(previous + (median - previous) * 0.8, decimals);
}

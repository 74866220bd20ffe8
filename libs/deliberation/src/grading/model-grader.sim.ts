import { hashString, seededRandom, type SimulatedResponder, type SimulationContext } from '@conclave/llm';
import { readFences } from '../shared/fence';
import { accuracyOf } from '../shared/graded-simulation';
import { MODEL_GRADER_OPENING } from './model-grader';
import { finalAnswerLine, normalizeText } from './text';

/** What a simulated judge reads of its prompt: the fenced question, expected answer and answer. */
export interface JudgedItem {
  question: string;
  expected: string;
  answer: string;
}

export function judgedItem(prompt: string): JudgedItem | null {
  const blocks = readFences(prompt).blocks;
  const text = (kind: string) => blocks.find((b) => b.kind === kind)?.text;
  const question = text('QUESTION');
  const expected = text('EXPECTED ANSWER');
  const answer = text('ANSWER');
  if (question === undefined || expected === undefined || answer === undefined) return null;
  return { question, expected, answer };
}

/**
 * The answer's final answer as a simulated judge reads it: its last `FINAL ANSWER:` line, else its
 * last non-empty line.
 */
export function judgedFinalAnswer(answer: string): string {
  const line = finalAnswerLine(answer);
  if (line !== null) return line;
  const lines = answer.split('\n').filter((l) => l.trim() !== '');
  return lines.at(-1)?.trim() ?? '';
}

/** Whether the answer's final answer equals the expected one after the text graders' normalization. */
export function simulatedJudgeAgrees(item: JudgedItem): boolean {
  const expected = normalizeText(item.expected);
  return expected !== '' && normalizeText(judgedFinalAnswer(item.answer)) === expected;
}

/**
 * A simulated judge's verdict: the normalized comparison above, told truthfully; a judge with an
 * `acc<N>` flag tells it truthfully with probability N % and flips it otherwise, deterministically
 * for the seed, the judge's name and the item (question, expected answer, answer), independently
 * across judges.
 */
export function simulatedJudgement(
  item: JudgedItem,
  judge: { seed: string; persona: string; flags: readonly string[] },
): { correct: boolean; truthful: boolean } {
  const agrees = simulatedJudgeAgrees(item);
  const noisy = judge.flags.some((f) => /^acc\d{1,3}$/.test(f));
  const accuracy = noisy ? accuracyOf(judge.flags) : 1;
  const draw = seededRandom(
    hashString(`${judge.seed}|judge|${judge.persona}|${item.question}|${item.expected}|${item.answer}`),
  )();
  const truthful = draw < accuracy;
  return { correct: truthful ? agrees : !agrees, truthful };
}

/**
 * The simulated judge of the model grader (prompt kind `grade`, so `sim/<name>:fail@grade` and the
 * like apply to its calls only): it answers the rubric's two lines. Without keys a model grader is
 * then testable to the item: each judge says CORRECT exactly when the answer's final line matches
 * the expected answer (normalized), unless its `acc<N>` flag makes it wrong on that item.
 */
export const judgeResponder: SimulatedResponder = {
  kind: 'grade',
  matches: (prompt) => prompt.startsWith(MODEL_GRADER_OPENING),
  respond: (ctx: SimulationContext) => {
    const item = judgedItem(ctx.prompt);
    if (!item) return 'VERDICT: INCORRECT\nREASON: the prompt showed no answer to grade.';
    const { correct } = simulatedJudgement(item, ctx);
    const read = judgedFinalAnswer(item.answer).slice(0, 80);
    return correct
      ? `VERDICT: CORRECT\nREASON: the final answer "${read}" matches the expected answer.`
      : `VERDICT: INCORRECT\nREASON: the final answer "${read}" does not match the expected answer.`;
  },
};

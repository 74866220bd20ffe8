import type { Grade } from '@conclave/contracts';
import { createFence } from '../shared/fence';
import { afterLabel, unwrapAnswer } from './text';

/**
 * The model grader's fixed rubric (issue 37): each judge of the roster reads the question, the
 * expected answer and the answer to grade, fenced as data (shared/fence.ts), and answers
 * `VERDICT: CORRECT` or `VERDICT: INCORRECT` with a `REASON:` line. The rubric is not
 * configurable, so grades from different runs mean the same thing.
 */
export const MODEL_GRADER_RUBRIC = [
  'The answer is CORRECT when its final answer means the same as the expected answer: the same value, choice, name or fact, whatever its wording, letter case, formatting, or the working shown before it. Numbers are equal when they are the same value written differently (1,000 and 1000; 0.5 and 1/2), in the same unit.',
  'The answer is INCORRECT when its final answer differs from the expected answer, contradicts it, gives several different final answers, hedges between candidates, or gives no final answer at all.',
  'Judge only the final answer against the expected answer. The expected answer is right by definition: do not use your own opinion of the right answer, and do not grade style, length or reasoning.',
] as const;

export interface ModelGraderInput {
  question: string;
  expected: string;
  answer: string;
}

/** The first line of every judge's prompt (the simulated judge knows its prompts by it). */
export const MODEL_GRADER_OPENING = 'You are grading an answer to a question against the expected answer.';

/** The prompt one judge is sent: a pure function of its input (a retried call sends the same bytes). */
export function modelGraderPrompt({ question, expected, answer }: ModelGraderInput): string {
  const fence = createFence([question, expected, answer], 'grader');
  return `${MODEL_GRADER_OPENING}

${fence.notice}

Question: ${fence.wrap('QUESTION', question)}

Expected answer: ${fence.wrap('EXPECTED ANSWER', expected)}

Answer to grade: ${fence.wrap('ANSWER', answer)}

Rubric:
${MODEL_GRADER_RUBRIC.map((rule) => `- ${rule}`).join('\n')}

Reply with exactly two lines:
VERDICT: CORRECT or VERDICT: INCORRECT
REASON: one sentence saying why`;
}

export type JudgeVerdict = 'correct' | 'incorrect' | 'unreadable';

export interface ParsedJudgement {
  verdict: JudgeVerdict;
  reason: string | null;
}

const REASON_MAX = 500;

/**
 * A judge's reply read: its last `VERDICT:` line (any case, Markdown around it; a quoted `> …`
 * line is not its own) decides; a value other than CORRECT or INCORRECT, or no such line, is
 * unreadable. The last `REASON:` line is the reason (first 500 characters).
 */
export function parseModelVerdict(reply: string): ParsedJudgement {
  let verdict: JudgeVerdict | null = null;
  let reason: string | null = null;
  const lines = reply.split('\n');
  for (let i = lines.length - 1; i >= 0 && (verdict === null || reason === null); i--) {
    if (verdict === null) {
      const value = afterLabel(lines[i], ['verdict']);
      if (value !== null) {
        let word = unwrapAnswer(value);
        while (word.endsWith('.') || word.endsWith('!')) word = word.slice(0, -1);
        word = word.trim().toUpperCase();
        verdict = word === 'CORRECT' ? 'correct' : word === 'INCORRECT' ? 'incorrect' : 'unreadable';
        continue;
      }
    }
    if (reason === null) {
      const value = afterLabel(lines[i], ['reason']);
      const text = value === null ? '' : unwrapAnswer(value);
      if (text !== '') reason = text.slice(0, REASON_MAX);
    }
  }
  return { verdict: verdict ?? 'unreadable', reason };
}

/**
 * The roster's grade: the majority of the judges' readable verdicts. No readable verdict, or as
 * many CORRECT as INCORRECT, is unreadable (the roster could not decide), with the split said.
 */
export function combineJudgements(judgements: readonly (ParsedJudgement & { model: string })[]): Grade {
  const correct = judgements.filter((j) => j.verdict === 'correct');
  const incorrect = judgements.filter((j) => j.verdict === 'incorrect');
  const unread = judgements.length - correct.length - incorrect.length;
  const tally = `${correct.length} correct, ${incorrect.length} incorrect${unread > 0 ? `, ${unread} unreadable` : ''}`;
  if (correct.length === 0 && incorrect.length === 0)
    return { verdict: 'unreadable', reason: `no judge's verdict could be read (${tally})`, grader: 'model' };
  if (correct.length === incorrect.length)
    return { verdict: 'unreadable', reason: `the judges split evenly (${tally})`, grader: 'model' };
  const winners = correct.length > incorrect.length ? correct : incorrect;
  const first = winners.find((j) => j.reason !== null);
  return {
    verdict: winners === correct ? 'correct' : 'incorrect',
    reason: `judges: ${tally}${first ? `; ${first.model}: ${first.reason}` : ''}`,
    grader: 'model',
  };
}

import { createHash } from 'node:crypto';
import {
  JUDGE_CALL_KEY_PREFIX,
  isJudgeCallKey,
  type Grade,
  type Grading,
  type ModeFacts,
  type ModelGraderSpec,
} from '@conclave/contracts';
import { combineJudgements, modelGraderPrompt, parseModelVerdict } from '../grading/model-grader';
import type { CallOutcome, PlannedCall, StageRow } from './types';

/**
 * The model grader's sub-step of a stage (issue 37, item 1), as plain functions: after the
 * stage's reduce, each row the mode's facts call an answer is sent to every judge of the roster
 * with the fixed rubric (modelGraderPrompt); the judges' replies are read (parseModelVerdict) and
 * their majority is the row's grade (combineJudgements), stored in `parsedData.grade` like any
 * other grader's.
 *
 * A judge's call is an ordinary model call of the stage: its key (`grade:…`) names the judge's
 * place in the roster and a digest of the prompt it is sent, so the same answer judged again (a
 * retried job, an identical answer of another row) is the same call, answered by a stored outcome
 * instead of being paid for twice. Without a model grader nothing here applies (no call, rows
 * untouched).
 */

/** The prefix of every judge call's key: never a key a mode's plan gives (contracts). */
export const JUDGE_KEY_PREFIX = JUDGE_CALL_KEY_PREFIX;

export const isJudgeKey = isJudgeCallKey;

export type ModelGrading = Grading & { grader: ModelGraderSpec };

export const isModelGrading = (grading: Grading | undefined): grading is ModelGrading =>
  grading?.grader.type === 'model';

/**
 * One answer row to grade: its index in the stage's rows and the judge calls that grade it (none
 * for an empty answer, unreadable without asking anyone).
 */
export interface JudgedAnswer {
  row: number;
  calls: PlannedCall[];
}

/** The key of judge `index` (0-based place in the roster) sent `prompt`. */
export function judgeCallKey(index: number, prompt: string): string {
  const digest = createHash('sha256').update(prompt).digest('hex').slice(0, 24);
  return `${JUDGE_KEY_PREFIX}${index}:${digest}`;
}

/**
 * The judge calls a stage's rows need: for every row the facts call an answer, one call a judge.
 * Empty for anything but a model grading, or for a mode whose facts name no answer.
 */
export function judgeCallsFor(
  rows: readonly StageRow[],
  grading: Grading | undefined,
  facts: Pick<ModeFacts, 'gradedAnswer'> | undefined,
  question: string,
): JudgedAnswer[] {
  if (!isModelGrading(grading) || !facts?.gradedAnswer) return [];
  const answerOf = facts.gradedAnswer;
  const expected = grading.expected === null ? '' : String(grading.expected);
  const judged: JudgedAnswer[] = [];
  rows.forEach((row, index) => {
    const answer = answerOf({ stageType: row.stageType, content: row.content, data: row.parsedData });
    if (answer === null) return;
    // Nothing to judge (e.g. a Delphi estimate its parser could not read): unreadable, unasked.
    if (answer.trim() === '') return void judged.push({ row: index, calls: [] });
    const prompt = modelGraderPrompt({ question, expected, answer });
    judged.push({
      row: index,
      calls: grading.grader.judges.map((model, judge) => ({
        key: judgeCallKey(judge, prompt),
        participant: model,
        model,
        messages: [{ role: 'user', content: prompt }],
      })),
    });
  });
  return judged;
}

/**
 * The judge calls still to make: each distinct key once, without those an outcome is stored for
 * (an earlier run of the stage made them; a failed one is not tried again: its judge counts as
 * unreadable).
 */
export function judgeCallsToMake(
  judged: readonly JudgedAnswer[],
  stored: (key: string) => CallOutcome | undefined,
): PlannedCall[] {
  const seen = new Set<string>();
  const out: PlannedCall[] = [];
  for (const { calls } of judged) {
    for (const call of calls) {
      if (seen.has(call.key) || stored(call.key) !== undefined) continue;
      seen.add(call.key);
      out.push(call);
    }
  }
  return out;
}

/** One answer's grade from its judges' outcomes: a failed or missing call is an unreadable judge. */
export function gradeFromJudges(
  calls: readonly PlannedCall[],
  outcome: (key: string) => CallOutcome | undefined,
): Grade {
  if (calls.length === 0) return { verdict: 'unreadable', reason: 'the answer is empty', grader: 'model' };
  return combineJudgements(
    calls.map((call) => {
      const result = outcome(call.key);
      if (!result) return { model: call.model, verdict: 'unreadable' as const, reason: 'no answer' };
      if (!result.ok) return { model: call.model, verdict: 'unreadable' as const, reason: result.error };
      return { model: call.model, ...parseModelVerdict(result.content) };
    }),
  );
}

/**
 * The rows with each judged answer's grade in `parsedData.grade` (its data kept). Rows without a
 * judged answer are returned as they are; with none at all, the same array.
 */
export function attachModelGrades(
  rows: StageRow[],
  judged: readonly JudgedAnswer[],
  outcome: (key: string) => CallOutcome | undefined,
): StageRow[] {
  if (judged.length === 0) return rows;
  const graded = [...rows];
  for (const { row, calls } of judged) {
    const grade = gradeFromJudges(calls, outcome);
    graded[row] = { ...rows[row], parsedData: { ...(rows[row].parsedData ?? {}), grade } };
  }
  return graded;
}

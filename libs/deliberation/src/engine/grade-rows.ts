import { GRADER_TYPES, type Grade, type GraderSpec, type Grading, type ModeFacts } from '@conclave/contracts';
import { gradeAnswer, isLocalGrading } from '../grading/graders';
import type { StageRow } from './types';

/**
 * Issue 37, item 2: a graded deliberation's answers are graded once, where they are produced. A
 * stage's rows, as its reduce made them, with every row the mode's facts call an answer
 * (`ModeFacts.gradedAnswer`) given its grade in `parsedData.grade`; the stage write stores them as
 * they are, so grades live in the rows' `parsed_data` jsonb (no column, no migration) and are
 * never recomputed. Without `grading` (an ungraded run), or for a mode whose facts name no answer,
 * the rows are returned untouched (the same array).
 *
 * The model grader (`grader.type === 'model'`) is not run here: its judges are calls of the stage,
 * made before the commit, and StageRun grades those rows from their outcomes (model-grading.ts).
 */
export function gradeRows(
  rows: StageRow[],
  grading: Grading | undefined,
  facts: Pick<ModeFacts, 'gradedAnswer'> | undefined,
): StageRow[] {
  if (!grading || !isLocalGrading(grading) || !facts?.gradedAnswer) return rows;
  const answerOf = facts.gradedAnswer;
  let changed = false;
  const graded = rows.map((row) => {
    const answer = answerOf({ stageType: row.stageType, content: row.content, data: row.parsedData });
    if (answer === null) return row;
    changed = true;
    const grade: Grade = gradeAnswer(answer, grading);
    return { ...row, parsedData: { ...(row.parsedData ?? {}), grade } };
  });
  return changed ? graded : rows;
}

/**
 * The grading a graded turn's user message keeps in its `config` jsonb (`{ expected, grader }`,
 * as validation stored it), or undefined for anything else (an ungraded turn: NULL or no grader).
 */
export function storedGrading(config: unknown): Grading | undefined {
  if (typeof config !== 'object' || config === null) return undefined;
  const { expected, grader } = config as { expected?: unknown; grader?: unknown };
  if (typeof grader !== 'object' || grader === null) return undefined;
  const type = (grader as { type?: unknown }).type;
  if (typeof type !== 'string' || !(GRADER_TYPES as readonly string[]).includes(type)) return undefined;
  if (expected !== null && typeof expected !== 'string' && typeof expected !== 'number') return undefined;
  return { expected, grader: grader as GraderSpec };
}

/**
 * What a load sets from a stored grading: the grading itself and the expected answer the model
 * calls are told (`LoadedDeliberation.expected`, for the simulated provider), as text.
 */
export function gradingFields(grading: Grading | undefined): { grading?: Grading; expected?: string } {
  if (!grading) return {};
  return {
    grading,
    ...(grading.expected !== null ? { expected: String(grading.expected) } : {}),
  };
}

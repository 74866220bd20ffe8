/**
 * Graded items (issue 37): a deliberation (or a batch item) may carry the answer it is expected to
 * give (`expected`) and how an answer is graded against it (`grader`). README "Graded items" is the
 * user's description; libs/deliberation/src/grading holds the graders, as plain functions.
 */

export const GRADER_TYPES = [
  'exact',
  'normalized',
  'choice',
  'numeric',
  'contains',
  'regex',
  'model',
] as const;
export type GraderType = (typeof GRADER_TYPES)[number];

/**
 * Where a text grader reads the final answer in a reply:
 * - `auto` (default): the last `FINAL ANSWER:` line when the reply has one, else the whole reply;
 * - `final-answer`: the last `FINAL ANSWER:` line only (a reply without one is unreadable);
 * - `whole`: the whole reply, trimmed.
 */
export const TEXT_EXTRACTIONS = ['auto', 'final-answer', 'whole'] as const;
export type TextExtraction = (typeof TEXT_EXTRACTIONS)[number];

/**
 * Where the numeric grader reads its number:
 * - `auto` (default): the last number of the last `FINAL ANSWER:` line when the reply has one,
 *   else the last number of the whole reply;
 * - `final-answer`: the last number of the last `FINAL ANSWER:` line only;
 * - `last-number`: the last number of the whole reply.
 */
export const NUMBER_EXTRACTIONS = ['auto', 'final-answer', 'last-number'] as const;
export type NumberExtraction = (typeof NUMBER_EXTRACTIONS)[number];

/** The extracted text equals the expected text after trimming (case and everything else count). */
export interface ExactGraderSpec {
  type: 'exact';
  extract?: TextExtraction;
}

/** Equal after normalization: Unicode NFKC, lower case, punctuation removed, whitespace collapsed. */
export interface NormalizedGraderSpec {
  type: 'normalized';
  extract?: TextExtraction;
}

/** The expected text appears in the extracted text as whole words, both normalized (letter case kept with `caseSensitive`). */
export interface ContainsGraderSpec {
  type: 'contains';
  extract?: TextExtraction;
  /** Normalize without lower-casing: letter case counts. Default false. */
  caseSensitive?: boolean;
}

/** Multiple choice: the options' texts in order, lettered A, B, C…; the expected answer is a letter. */
export interface ChoiceGraderSpec {
  type: 'choice';
  /** 2 to 26 options; option i is letter String.fromCharCode(65 + i). */
  options: string[];
}

/** A number within a tolerance: |answer − expected| ≤ max(absoluteTolerance, relativeTolerance × |expected|). */
export interface NumericGraderSpec {
  type: 'numeric';
  extract?: NumberExtraction;
  /** Default 0. */
  absoluteTolerance?: number;
  /** A fraction of |expected| (0.01 = 1 %). Default 0. */
  relativeTolerance?: number;
}

/**
 * A regular expression, guarded against catastrophic backtracking (see `regexSafetyProblem`).
 * Without `group`: the answer is correct when the pattern matches the extracted text (no match:
 * incorrect), and `expected` is optional (a label). With `group` (a number, or a named group): the
 * group of the pattern's last match is the extracted answer, compared with `expected` as the
 * `normalized` grader does; no match is unreadable.
 */
export interface RegexGraderSpec {
  type: 'regex';
  pattern: string;
  /** Any of `i`, `m`, `s`, `u`, each at most once. */
  flags?: string;
  group?: number | string;
  extract?: TextExtraction;
}

/**
 * A judge roster grades the answer against the expected one with a fixed rubric
 * (`modelGraderPrompt`) and answers `VERDICT: CORRECT|INCORRECT` with a `REASON:` line; the
 * majority of readable verdicts decides. Run as a Conclave call (wired later).
 */
export interface ModelGraderSpec {
  type: 'model';
  /** 1 to 5 model ids (`provider/name`). */
  judges: string[];
}

/**
 * The model grader's judge calls are calls of the stage whose answers they grade, stored in
 * model_calls under keys with this prefix (never a key a mode's plan gives): usage counts them,
 * and readers of a stage's calls as the mode's contributions (a partial result) leave them out.
 */
export const JUDGE_CALL_KEY_PREFIX = 'grade:';

export const isJudgeCallKey = (key: string): boolean => key.startsWith(JUDGE_CALL_KEY_PREFIX);

export type GraderSpec =
  | ExactGraderSpec
  | NormalizedGraderSpec
  | ContainsGraderSpec
  | ChoiceGraderSpec
  | NumericGraderSpec
  | RegexGraderSpec
  | ModelGraderSpec;

/**
 * What a validated request keeps for grading (stored in the item's user message `config` as
 * `expected` and `grader`): the expected answer in its grader's form (a number for `numeric`, a
 * letter for `choice`, trimmed text otherwise; null only for a regex without a group given none)
 * and the grader with its defaults filled in.
 */
export interface Grading {
  expected: string | number | null;
  grader: GraderSpec;
}

export type GradeVerdict = 'correct' | 'incorrect' | 'unreadable';

/** One answer's grade. `unreadable`: the grader could not find an answer in the text (never counted as wrong). */
export interface Grade {
  verdict: GradeVerdict;
  /** The answer as the grader read it (a number as text, a choice letter, the final-answer text…). */
  extracted?: string;
  /** Why, in a sentence: what was compared, or why nothing could be read. */
  reason?: string;
  grader: GraderType;
}

/**
 * The grade a stored stage row holds (issue 37, item 2): the engine grades a graded turn's answer
 * rows once, as their stage is reduced, into `parsed_data.grade`. Null for a row without one.
 */
export function storedGradeOf(parsedData: unknown): Grade | null {
  if (typeof parsedData !== 'object' || parsedData === null || !('grade' in parsedData)) return null;
  const grade: unknown = parsedData.grade;
  if (typeof grade !== 'object' || grade === null || !('verdict' in grade)) return null;
  return grade.verdict === 'correct' || grade.verdict === 'incorrect' || grade.verdict === 'unreadable'
    ? (grade as Grade)
    : null;
}

/** One graded answer of a deliberation, as its stage row stores it. */
export interface AnswerGrade {
  /** The row's stage type (council `stage1`, vote `initial_answer`, debate `revision`, Delphi `round_2`, …). */
  stageType: string;
  model: string | null;
  role: string | null;
  /** The seat in the roster, where the mode keeps one (null otherwise). */
  participant: number | null;
  grade: Grade;
}

/**
 * A graded deliberation's grades (the deliberation view's `grades`, present only when some answer
 * has one): every graded answer in stored order, and the panel's final answer's (the last of the
 * stage the mode's facts call final: council's synthesis, the vote or debate winner, Delphi's last
 * round's panel value); null while the panel has none.
 */
export interface DeliberationGrades {
  answers: AnswerGrade[];
  final: AnswerGrade | null;
}

/** A stored stage row as far as grades go (a StageRow's `parsedData`, a report row's `data`). */
export interface GradedRowLike {
  stageType: string;
  model: string | null;
  role?: string | null;
  participant?: number | null;
  parsedData?: unknown;
  data?: unknown;
}

/**
 * A deliberation's grades from its stored rows (in stored order), or null when no row has one (an
 * ungraded run). `facts.gradedFinal` names the stage types holding the panel's answer.
 */
export function deliberationGrades(
  rows: readonly GradedRowLike[],
  facts: { gradedFinal?(stageType: string): boolean } | undefined,
): DeliberationGrades | null {
  const answers: AnswerGrade[] = [];
  for (const row of rows) {
    const grade = storedGradeOf(row.parsedData ?? row.data);
    if (!grade) continue;
    answers.push({
      stageType: row.stageType,
      model: row.model,
      role: row.role ?? null,
      participant: row.participant ?? null,
      grade,
    });
  }
  if (answers.length === 0) return null;
  const finals = answers.filter((a) => facts?.gradedFinal?.(a.stageType) === true);
  return { answers, final: finals.at(-1) ?? null };
}

/** Grades without their authors' names (a Delphi exercise still running keeps its panelists anonymous). */
export function anonymousGrades(grades: DeliberationGrades): DeliberationGrades {
  const anonymous = (a: AnswerGrade): AnswerGrade => ({ ...a, model: null });
  return { answers: grades.answers.map(anonymous), final: grades.final ? anonymous(grades.final) : null };
}

/** The longest expected answer taken (characters, after trimming). */
export const EXPECTED_MAX_LENGTH = 2000;
/** The longest regular expression taken. */
export const GRADER_PATTERN_MAX_LENGTH = 500;
/** The longest option text of a choice grader. */
export const CHOICE_OPTION_MAX_LENGTH = 500;
export const CHOICE_MIN_OPTIONS = 2;
export const CHOICE_MAX_OPTIONS = 26;
export const MODEL_GRADER_MAX_JUDGES = 5;

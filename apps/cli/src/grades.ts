import type { AnswerGrade, DeliberationGrades, GradeVerdict } from '@conclave/contracts';
import { printable } from './answers';
import { UsageError } from './errors';

/**
 * `--expected` and `--grader` of `ask` (issue 37 item 7): the request's `expected` and `grader`,
 * checked by the server as for POST /api/deliberations. `--grader` is a grader's type
 * (`numeric`) or its JSON object (`{"type":"numeric","absoluteTolerance":0.5}`).
 */
export function graderFlag(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) {
    if (!/^[a-z-]+$/.test(trimmed))
      throw new UsageError(
        `--grader must be a grader type (such as numeric) or a JSON object, got "${text}"`,
      );
    return { type: trimmed };
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw new UsageError('--grader is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError('--grader must be a JSON object or a grader type');
  return value as Record<string, unknown>;
}

const MARKS: Record<GradeVerdict, string> = { correct: '✓', incorrect: '✗', unreadable: '?' };

function line(answer: AnswerGrade): string {
  const { grade } = answer;
  const who = [answer.role, answer.model].filter((part): part is string => part !== null).join(' ');
  const read = grade.extracted !== undefined ? ` ${JSON.stringify(grade.extracted)}` : '';
  const why = grade.reason ? ` (${grade.reason})` : '';
  return printable(
    `${MARKS[grade.verdict]} ${grade.verdict}${read}: ${who || 'the panel'} [${answer.stageType}]${why}`,
  );
}

/**
 * The grades printed after a graded deliberation's answer: the panel's final verdict, then every
 * graded answer marked ✓ (correct), ✗ (incorrect) or ? (unreadable) with what was read and why.
 */
export function gradeLines(grades: DeliberationGrades | undefined): string[] {
  if (!grades) return [];
  const final = grades.final;
  return [
    final
      ? `graded: the panel's final answer is ${final.grade.verdict} ${MARKS[final.grade.verdict]}`
      : 'graded: the panel has no final answer to grade',
    ...(final ? [`  final ${line(final)}`] : []),
    `  answers (${grades.answers.length}):`,
    ...grades.answers.map((answer) => `    ${line(answer)}`),
  ];
}

import type { BatchResultLine, ModeName } from '@conclave/contracts';
import { neutraliseCell } from '@conclave/analysis';
import { modeDefinition } from '@conclave/deliberation';
import { stringify } from 'csv-stringify/sync';

const CSV_HEADER = [
  'index',
  'message_id',
  'conversation_id',
  'mode',
  'status',
  'error',
  'attempt',
  'question',
  'content',
  'original_question',
  'answer',
  'headline',
  'result_url',
  'degraded',
  'partial',
  'key',
  'reference',
];

/**
 * What an item was asked, each in its own field: the question as submitted and, for a mode whose
 * user message is not the question (jury), that message (the content under evaluation), computed
 * from the resolved config as the mode stored it; jury's `originalQuestion` when it was given.
 */
export function itemTexts(
  mode: ModeName,
  question: string,
  config: unknown,
): Pick<BatchResultLine, 'question' | 'content' | 'originalQuestion'> {
  const definition = modeDefinition(mode);
  const content = definition?.userContent ? definition.userContent(question, config) : null;
  const original =
    typeof config === 'object' && config !== null && 'originalQuestion' in config
      ? config.originalQuestion
      : null;
  return { question, content, originalQuestion: typeof original === 'string' ? original : null };
}

/**
 * The one CSV-injection rule (a formula-like cell gets a leading `'`) lives with the CSV reader and
 * writer in @conclave/analysis (datasets/csv.ts), which the example dataset's CSV also uses.
 */
export { neutraliseCell };

/** Delphi's numeric final value: a number column in all but name, written as the number. */
function numericAnswer(line: BatchResultLine): number | null {
  const finalValue = line.headline?.finalValue;
  return typeof finalValue === 'number' && line.answer === String(finalValue) ? finalValue : null;
}

/** One CSV record: numbers stay numbers; every text cell is neutralised. */
export function csvRow(line: BatchResultLine): (string | number)[] {
  const text = (value: string | null) => neutraliseCell(value ?? '');
  return [
    line.index,
    text(line.messageId),
    text(line.conversationId),
    text(line.mode),
    text(line.status),
    text(line.error),
    line.attempt,
    text(line.question),
    text(line.content),
    text(line.originalQuestion),
    numericAnswer(line) ?? text(line.answer),
    text(line.headline ? JSON.stringify(line.headline) : null),
    text(line.resultUrl),
    text(line.degraded?.summary ?? null),
    text(line.partial ? JSON.stringify(line.partial) : null),
    text(line.key),
    typeof line.reference === 'number' ? line.reference : text(line.reference),
  ];
}

/**
 * Issue 37: a batch with graded items has two more columns, last: `expected` (the expected answer
 * as stored: a number stays a number) and `verdict` (the panel's final answer's stored grade:
 * correct / incorrect / unreadable; empty while it has none, and on an ungraded item).
 */
const GRADED_HEADER = ['expected', 'verdict'];

export function gradedCells(line: BatchResultLine): (string | number)[] {
  const expected = line.expected ?? null;
  return [
    typeof expected === 'number' ? expected : neutraliseCell(expected ?? ''),
    neutraliseCell(line.grade?.verdict ?? ''),
  ];
}

export const CSV_HEADER_LINE = stringify([CSV_HEADER]);
export const GRADED_CSV_HEADER_LINE = stringify([[...CSV_HEADER, ...GRADED_HEADER]]);

/** Text cells are quoted (OWASP: quote, prefix, escape quotes); numbers are not, so they stay numbers. */
export const csvRecords = (lines: BatchResultLine[], graded = false): string =>
  stringify(
    lines.map((line) => (graded ? [...csvRow(line), ...gradedCells(line)] : csvRow(line))),
    { quoted_string: true },
  );

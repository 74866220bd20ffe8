import { CsvSyntaxError, parseCsv } from './csv';

/**
 * Datasets in the shapes people already have (issue 37 item 6), turned into graded items: JSONL
 * (one JSON object a line) or CSV (a header row) with a question and an answer, and for a
 * multiple-choice item its choices, as a JSON array (`choices`) or as columns `A`, `B`, `C`, ….
 *
 * - question: `question` (also `prompt`, `input`); required, not blank.
 * - answer: `answer` (also `expected`, `target`, `label`); required. For a multiple-choice item a
 *   letter of an option (`b` and `(B)` read as `B`, even when an option's text is "b"), else the
 *   text of one option, or, in JSONL only, a 0-based index as a JSON number (MMLU's shape); it is
 *   stored as the letter.
 * - key: `id` (also `key`); optional, kept as the item's key.
 *
 * The grader each item suggests (`graderHint`): `choice` for an item with choices, `numeric` for
 * an answer that is a plain decimal number (`42`, `-3.5`, `1e3`, `1,250` with thousands commas),
 * `text` (normalized text match) otherwise. Cells are data: `=1+1` is a text answer of those four
 * characters, never evaluated. Errors name the line (JSONL) or the CSV line and record.
 */

export type GraderHint = 'numeric' | 'choice' | 'text';

export interface DatasetItem {
  /** 1-based line of the file the item starts on. */
  line: number;
  /** The item's `id`, when the file gives one. */
  key?: string;
  question: string;
  /** The right answer: a number's text as written (thousands commas removed), a choice letter, or text. */
  expected: string;
  graderHint: GraderHint;
  /** A multiple-choice item's options, in order: option A first. */
  choices?: string[];
}

export interface DatasetProblem {
  /** 1-based line of the file (for CSV, the line its record starts on). */
  line: number;
  /** CSV only: the 1-based record, the header being record 1. */
  record?: number;
  message: string;
}

export type DatasetFormat = 'jsonl' | 'csv';

export type ParsedDataset =
  | { ok: true; format: DatasetFormat; items: DatasetItem[] }
  | { ok: false; format: DatasetFormat; problems: DatasetProblem[] };

export interface ParseDatasetOptions {
  /** The format; by default from `fileName`'s extension, else from the text (`{` first: JSONL). */
  format?: DatasetFormat;
  fileName?: string;
  /** Stop after this many problems (default 20): a wrong file is named wrong soon enough. */
  maxProblems?: number;
  /** More items than this is a problem (default: none). */
  maxItems?: number;
}

const QUESTION_FIELDS = ['question', 'prompt', 'input'];
const ANSWER_FIELDS = ['answer', 'expected', 'target', 'label'];
const KEY_FIELDS = ['id', 'key'];
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** A plain decimal number; thousands commas allowed when every group has three digits. */
const NUMBER = /^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?$|^[+-]?\.\d+$/;

/** The format a file's name or text says. */
export function datasetFormatOf(text: string, fileName?: string): DatasetFormat {
  const extension = fileName?.toLowerCase().match(/\.([a-z]+)$/)?.[1];
  if (extension === 'jsonl' || extension === 'ndjson' || extension === 'json') return 'jsonl';
  if (extension === 'csv') return 'csv';
  return text
    .replace(/^\uFEFF/, '')
    .trimStart()
    .startsWith('{')
    ? 'jsonl'
    : 'csv';
}

/** Whether an answer reads as a number for a numeric grader. */
export const isNumericAnswer = (answer: string): boolean => NUMBER.test(answer.trim());

export function parseDataset(text: string, options: ParseDatasetOptions = {}): ParsedDataset {
  const format = options.format ?? datasetFormatOf(text, options.fileName);
  const problems = new Problems(options.maxProblems ?? 20);
  const items = format === 'jsonl' ? parseJsonl(text, problems) : parseCsvDataset(text, problems);
  if (items.length === 0 && problems.list.length === 0) {
    problems.add({ line: 1, message: 'the file has no items' });
  }
  if (options.maxItems !== undefined && items.length > options.maxItems) {
    problems.add({
      line: items[options.maxItems].line,
      message: `more than ${options.maxItems} items (${items.length})`,
    });
  }
  return problems.list.length > 0
    ? { ok: false, format, problems: problems.list }
    : { ok: true, format, items };
}

/** One line a problem, in words: `line 4: …` or `line 4 (record 3): …`. */
export function describeProblem(problem: DatasetProblem): string {
  const where =
    problem.record === undefined ? `line ${problem.line}` : `line ${problem.line} (record ${problem.record})`;
  return `${where}: ${problem.message}`;
}

/**
 * A multiple-choice item's question as a model is asked it: the question, then one line per
 * option (`A) …`), the shape the simulated panel reads option letters from.
 */
export function questionWithChoices(item: Pick<DatasetItem, 'question' | 'choices'>): string {
  if (!item.choices || item.choices.length === 0) return item.question;
  return `${item.question}\n\n${item.choices.map((c, i) => `${LETTERS[i]}) ${c}`).join('\n')}`;
}

class Problems {
  readonly list: DatasetProblem[] = [];
  constructor(private readonly max: number) {}
  get full(): boolean {
    return this.list.length >= this.max;
  }
  add(problem: DatasetProblem): void {
    if (!this.full) this.list.push(problem);
  }
}

/** The raw fields of one row, by lower-cased name. */
type Row = Map<string, unknown>;

const first = (row: Row, names: readonly string[]): { name: string; value: unknown } | undefined => {
  for (const name of names) if (row.has(name)) return { name, value: row.get(name) };
  return undefined;
};

/** The item a row makes, or the reason it makes none. */
function itemOf(row: Row, line: number, csv: boolean): DatasetItem | string {
  const question = first(row, QUESTION_FIELDS);
  if (question === undefined) return `no question (a "question" field)`;
  if (typeof question.value !== 'string') return `"${question.name}" must be text`;
  if (question.value.trim() === '') return `"${question.name}" is empty`;
  const answer = first(row, ANSWER_FIELDS);
  if (answer === undefined) return `no answer (an "answer" field)`;
  if (typeof answer.value !== 'string' && typeof answer.value !== 'number') {
    return `"${answer.name}" must be text or a number`;
  }
  if (typeof answer.value === 'number' && !Number.isFinite(answer.value))
    return `"${answer.name}" is not a finite number`;
  const answerText = String(answer.value).trim();
  if (answerText === '') return `"${answer.name}" is empty`;
  const keyField = first(row, KEY_FIELDS);
  let key: string | undefined;
  if (keyField !== undefined && keyField.value !== '' && keyField.value !== null) {
    if (typeof keyField.value !== 'string' && typeof keyField.value !== 'number') {
      return `"${keyField.name}" must be text or a number`;
    }
    key = String(keyField.value);
  }
  const choices = choicesOf(row);
  if (typeof choices === 'string') return choices;
  const base = { line, ...(key !== undefined ? { key } : {}), question: question.value };
  if (choices) {
    const letter = choiceLetter(answer.value, choices, csv);
    if (letter === null) {
      return `"${answer.name}" ${JSON.stringify(answer.value)} names none of the ${choices.length} choices (a letter A–${LETTERS[choices.length - 1]}${csv ? '' : ', a 0-based index'} or a choice's text)`;
    }
    return { ...base, expected: letter, graderHint: 'choice', choices };
  }
  const numeric = typeof answer.value === 'number' || isNumericAnswer(answerText);
  return {
    ...base,
    expected: numeric ? answerText.replaceAll(',', '') : answerText,
    graderHint: numeric ? 'numeric' : 'text',
  };
}

/** The row's choices (null: none; a string: why they are wrong). */
function choicesOf(row: Row): string[] | null | string {
  const listed = row.get('choices') ?? row.get('options');
  if (listed !== undefined && listed !== '') {
    let value: unknown = listed;
    if (typeof listed === 'string') {
      try {
        value = JSON.parse(listed);
      } catch {
        return `"choices" must be a JSON array of texts, e.g. ["3", "4", "5"]`;
      }
    }
    if (!Array.isArray(value) || value.some((c) => typeof c !== 'string' && typeof c !== 'number')) {
      return `"choices" must be an array of texts`;
    }
    return checkedChoices(value.map(String));
  }
  // Columns A, B, C, … (CSV), or fields of those names (JSONL): consecutive from A.
  const lettered: string[] = [];
  for (const letter of LETTERS.toLowerCase()) {
    const value = row.get(letter);
    if (value === undefined || value === '' || value === null) break;
    if (typeof value !== 'string' && typeof value !== 'number')
      return `choice "${letter.toUpperCase()}" must be text`;
    lettered.push(String(value));
  }
  const gap = [...LETTERS.toLowerCase()].slice(lettered.length + 1).find((l) => {
    const v = row.get(l);
    return v !== undefined && v !== '' && v !== null;
  });
  if (gap) return `choice ${gap.toUpperCase()} is given but choice ${LETTERS[lettered.length]} is empty`;
  if (lettered.length === 0) return null;
  return checkedChoices(lettered);
}

function checkedChoices(choices: string[]): string[] | string {
  if (choices.length < 2) return 'a multiple-choice item needs at least two choices';
  if (choices.length > LETTERS.length) return `at most ${LETTERS.length} choices`;
  const blank = choices.findIndex((c) => c.trim() === '');
  if (blank >= 0) return `choice ${LETTERS[blank]} is empty`;
  return choices;
}

/** The letter an answer names among `choices`, or null. */
function choiceLetter(answer: string | number, choices: readonly string[], csv: boolean): string | null {
  if (typeof answer === 'number') {
    // A JSON number is a 0-based index (MMLU); a CSV cell is text, read below.
    return !csv && Number.isInteger(answer) && answer >= 0 && answer < choices.length
      ? LETTERS[answer]
      : null;
  }
  const text = answer.trim();
  // A letter of an option first (`b` is option B even when an option's text is "b"), then a text.
  const letter = /^\(?([A-Za-z])\)?\.?$/.exec(text)?.[1]?.toUpperCase();
  if (letter !== undefined && LETTERS.indexOf(letter) < choices.length) return letter;
  const index = choices.findIndex((c) => c.trim() === text);
  return index >= 0 ? LETTERS[index] : null;
}

function parseJsonl(text: string, problems: Problems): DatasetItem[] {
  const items: DatasetItem[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  for (let i = 0; i < lines.length && !problems.full; i++) {
    const source = lines[i].trim();
    if (source === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (error) {
      problems.add({ line: i + 1, message: `not valid JSON (${(error as Error).message})` });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.add({ line: i + 1, message: 'each line must be one JSON object' });
      continue;
    }
    const row: Row = new Map(Object.entries(value).map(([k, v]) => [k.trim().toLowerCase(), v]));
    const item = itemOf(row, i + 1, false);
    if (typeof item === 'string') problems.add({ line: i + 1, message: item });
    else items.push(item);
  }
  return items;
}

function parseCsvDataset(text: string, problems: Problems): DatasetItem[] {
  let records;
  try {
    records = parseCsv(text);
  } catch (error) {
    if (!(error instanceof CsvSyntaxError)) throw error;
    problems.add({ line: error.line, record: error.record, message: error.detail });
    return [];
  }
  const [header, ...rows] = records;
  if (header === undefined) return [];
  const names = header.cells.map((c) => c.trim().toLowerCase());
  const seen = new Set<string>();
  for (const name of names) {
    if (name !== '' && seen.has(name)) {
      problems.add({
        line: header.line,
        record: 1,
        message: `the column "${name}" appears twice in the header`,
      });
    }
    seen.add(name);
  }
  if (!QUESTION_FIELDS.some((f) => seen.has(f)) || !ANSWER_FIELDS.some((f) => seen.has(f))) {
    problems.add({
      line: header.line,
      record: 1,
      message: `the header must name a "question" and an "answer" column (found: ${header.cells.join(', ') || 'nothing'})`,
    });
  }
  if (problems.list.length > 0) return [];
  const items: DatasetItem[] = [];
  rows.forEach((record, index) => {
    if (problems.full) return;
    const where = { line: record.line, record: index + 2 };
    if (record.cells.length !== names.length) {
      problems.add({
        ...where,
        message: `${record.cells.length} cells where the header has ${names.length} columns`,
      });
      return;
    }
    const row: Row = new Map();
    names.forEach((name, i) => {
      if (name !== '') row.set(name, record.cells[i]);
    });
    const item = itemOf(row, record.line, true);
    if (typeof item === 'string') problems.add({ ...where, message: item });
    else items.push(item);
  });
  return items;
}

import {
  BATCH_DEFAULT_CONCURRENCY,
  BATCH_MAX_CONCURRENCY,
  BATCH_MAX_ITEMS,
  type BatchRequest,
  type DeliberationRequest,
} from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import type { FieldErrors } from '@conclave/deliberation';

export const CSV_COLUMNS = ['question', 'content', 'originalQuestion'] as const;

export interface ParsedBatch {
  name: string | null;
  defaults: Partial<DeliberationRequest>;
  items: Record<string, unknown>[];
  concurrency: number;
  generateTitles: boolean;
}

export type BatchParse = { ok: true; batch: ParsedBatch } | { ok: false; fields: FieldErrors };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A CSV row becomes a request: `question`, and `content` / `originalQuestion` into `modeConfig`. */
function rowToItem(row: Record<string, string>): Record<string, unknown> {
  const modeConfig: Record<string, string> = {};
  if (row.content) modeConfig.content = row.content;
  if (row.originalQuestion) modeConfig.originalQuestion = row.originalQuestion;
  return {
    ...(row.question !== undefined ? { question: row.question } : {}),
    ...(Object.keys(modeConfig).length ? { modeConfig } : {}),
  };
}

/** A header line that cannot be used; thrown from the parser's `columns` callback. */
class CsvHeaderError extends Error {}

/**
 * The header line itself is checked: a column named `__proto__` never shows up among a parsed
 * row's keys (assigning a string to it does nothing), and a repeated one would overwrite.
 */
function checkedHeader(header: string[]): string[] {
  const unknown = header.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  if (unknown.length > 0)
    throw new CsvHeaderError(`unknown CSV column(s) ${unknown.join(', ')}: use ${CSV_COLUMNS.join(', ')}`);
  const repeated = header.find((c, i) => header.indexOf(c) !== i);
  if (repeated !== undefined) throw new CsvHeaderError(`CSV column ${repeated} appears more than once`);
  return header;
}

export function itemsFromCsv(text: string): { items: Record<string, unknown>[] } | { error: string } {
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { columns: checkedHeader, skip_empty_lines: true, trim: true, bom: true }) as Record<
      string,
      string
    >[];
  } catch (error) {
    if (error instanceof CsvHeaderError) return { error: error.message };
    return { error: `the CSV could not be read: ${(error as Error).message}` };
  }
  return { items: rows.map(rowToItem) };
}

export function itemsFromJsonl(text: string): { items: Record<string, unknown>[] } | { error: string } {
  const items: Record<string, unknown>[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    try {
      const value: unknown = JSON.parse(line);
      if (!isObject(value)) return { error: `line ${i + 1} is not a JSON object` };
      items.push(value);
    } catch {
      return { error: `line ${i + 1} is not valid JSON` };
    }
  }
  return { items };
}

const ENVELOPE_KEYS = new Set(['name', 'defaults', 'items', 'concurrency', 'generateTitles']);

/** The batch envelope, from a JSON body or from an upload's query parameters plus its items. */
export function parseBatch(body: unknown, uploaded?: Record<string, unknown>[]): BatchParse {
  const fields: FieldErrors = {};
  const input: Record<string, unknown> = isObject(body) ? body : {};
  if (!uploaded && !isObject(body))
    return { ok: false, fields: { body: 'the request body must be a JSON object' } };
  for (const key of Object.keys(input))
    if (!ENVELOPE_KEYS.has(key)) fields[key] = `property ${key} should not exist`;
  const name = input.name ?? null;
  if (name !== null && (typeof name !== 'string' || name.length > 200))
    fields.name = 'name must be a string of at most 200 characters';
  // PostgreSQL text cannot hold NUL (the items' fields are checked by the request validator).
  else if (typeof name === 'string' && name.includes('\u0000'))
    fields.name = 'name must not contain NUL characters';
  const concurrency = input.concurrency ?? BATCH_DEFAULT_CONCURRENCY;
  if (
    !Number.isInteger(concurrency) ||
    (concurrency as number) < 1 ||
    (concurrency as number) > BATCH_MAX_CONCURRENCY
  ) {
    fields.concurrency = `concurrency must be a whole number from 1 to ${BATCH_MAX_CONCURRENCY}`;
  }
  const generateTitles = input.generateTitles ?? false;
  if (typeof generateTitles !== 'boolean') fields.generateTitles = 'generateTitles must be true or false';
  const defaults = input.defaults ?? {};
  if (!isObject(defaults)) fields.defaults = 'defaults must be an object';
  else {
    if ('question' in defaults) fields['defaults.question'] = 'each item has its own question';
    if ('conversationId' in defaults)
      fields['defaults.conversationId'] = 'batch items start new conversations';
  }
  const items = uploaded ?? input.items;
  if (!Array.isArray(items) || items.length === 0) fields.items = 'items must be a non-empty array';
  else if (items.length > BATCH_MAX_ITEMS)
    fields.items = `a batch holds at most ${BATCH_MAX_ITEMS} items (got ${items.length})`;
  else if (items.some((item) => !isObject(item))) {
    items.forEach((item, i) => {
      if (!isObject(item)) fields[`items[${i}]`] = 'each item must be an object';
    });
  }
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    batch: {
      name: name as string | null,
      defaults: defaults as Partial<DeliberationRequest>,
      items: items as Record<string, unknown>[],
      concurrency: concurrency as number,
      generateTitles: generateTitles as boolean,
    },
  };
}

/** An item over the batch's defaults; its own fields win and `modeConfig` merges key by key. */
export function withDefaults(
  defaults: Partial<DeliberationRequest>,
  item: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...defaults, ...item };
  const own = item.modeConfig;
  // An item's modeConfig of the wrong type is left as it is, for validation to name.
  if (isObject(defaults.modeConfig) && (own === undefined || isObject(own))) {
    merged.modeConfig = { ...defaults.modeConfig, ...(own ?? {}) };
  }
  return merged;
}

export type { BatchRequest };

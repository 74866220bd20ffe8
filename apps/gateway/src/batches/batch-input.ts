import {
  BATCH_DEFAULT_CONCURRENCY,
  BATCH_MAX_CONCURRENCY,
  BATCH_MAX_ITEMS,
  type BatchRequest,
  type DeliberationRequest,
} from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import { modeFacts, type FieldErrors } from '@conclave/deliberation';

export const CSV_COLUMNS = [
  'question',
  'content',
  'originalQuestion',
  'reference',
  'key',
  'expected',
] as const;

export interface ParsedBatch {
  name: string | null;
  defaults: Partial<DeliberationRequest>;
  items: Record<string, unknown>[];
  concurrency: number;
  generateTitles: boolean;
  /** No new item starts once the batch's recorded cost reaches this; null for no budget. */
  maxCostUsd: number | null;
}

/** The largest `maxCostUsd` taken (a typo guard, not a policy). */
export const BATCH_MAX_COST_USD = 1_000_000;

export type BatchParse = { ok: true; batch: ParsedBatch } | { ok: false; fields: FieldErrors };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A CSV row becomes a request: `question`, and `content` / `originalQuestion` into `modeConfig`;
 * `reference` and `key` (for reports, issue 21) and `expected` (issue 37: graded by the batch's
 * `defaults.grader`, else as text) stay beside it when the cell is not empty.
 */
function rowToItem(row: Record<string, string>): Record<string, unknown> {
  const modeConfig: Record<string, string> = {};
  if (row.content) modeConfig.content = row.content;
  if (row.originalQuestion) modeConfig.originalQuestion = row.originalQuestion;
  return {
    ...(row.question !== undefined ? { question: row.question } : {}),
    ...(Object.keys(modeConfig).length ? { modeConfig } : {}),
    ...(row.reference ? { reference: row.reference } : {}),
    ...(row.key ? { key: row.key } : {}),
    ...(row.expected ? { expected: row.expected } : {}),
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

const ENVELOPE_KEYS = new Set(['name', 'defaults', 'items', 'concurrency', 'generateTitles', 'maxCostUsd']);

/** The batch envelope, from a JSON body or from an upload's query parameters plus its items. */
export function parseBatch(body: unknown, uploaded?: Record<string, unknown>[]): BatchParse {
  const fields: FieldErrors = {};
  const input: Record<string, unknown> = isObject(body) ? body : {};
  if (!uploaded && !isObject(body))
    return { ok: false, fields: { body: 'the request body must be a JSON object' } };
  // Defined, not assigned: an assignment to `__proto__` would drop its error and let the field through.
  for (const key of Object.keys(input))
    if (!ENVELOPE_KEYS.has(key))
      Object.defineProperty(fields, key, {
        value: `property ${key} should not exist`,
        enumerable: true,
        writable: true,
        configurable: true,
      });
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
  const maxCostUsd = input.maxCostUsd ?? null;
  if (
    maxCostUsd !== null &&
    (typeof maxCostUsd !== 'number' ||
      !Number.isFinite(maxCostUsd) ||
      maxCostUsd <= 0 ||
      maxCostUsd > BATCH_MAX_COST_USD)
  ) {
    fields.maxCostUsd = `maxCostUsd must be a number of US dollars greater than 0 (at most ${BATCH_MAX_COST_USD})`;
  }
  const defaults = input.defaults ?? {};
  if (!isObject(defaults)) fields.defaults = 'defaults must be an object';
  else {
    if ('question' in defaults) fields['defaults.question'] = 'each item has its own question';
    if ('conversationId' in defaults)
      fields['defaults.conversationId'] = 'batch items start new conversations';
    for (const own of ITEM_ONLY_FIELDS) {
      if (own in defaults) fields[`defaults.${own}`] = `each item has its own ${own}`;
    }
    // Issue 37: one grader may serve every item (defaults.grader), but each has its own answer.
    if ('expected' in defaults) fields['defaults.expected'] = 'each item has its own expected answer';
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
      maxCostUsd: maxCostUsd as number | null,
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

// --- Report fields of an item (issue 21): `reference` and `key` -----------------------------------

/** Fields an item may carry for reports; they are not part of the deliberation request. */
const ITEM_ONLY_FIELDS = ['reference', 'key'] as const;
export const REFERENCE_MAX_LENGTH = 500;
export const KEY_MAX_LENGTH = 200;

/** What an item carries for reports, stored with the item (its user message's config). */
export interface ItemAnnotations {
  /** Jury: a verdict; Delphi: the expected value (a number) or answer; council, vote, debate: the expected winner model. */
  reference?: string | number;
  /** Matches the item with the item of the same key in another batch (compare). */
  key?: string;
}

/** The item without its report fields (to validate as a deliberation request), and those fields. */
export function splitAnnotations(item: Record<string, unknown>): {
  request: Record<string, unknown>;
  annotations: { reference?: unknown; key?: unknown };
} {
  const { reference, key, ...request } = item;
  return {
    request,
    annotations: {
      ...(reference !== undefined && reference !== null ? { reference } : {}),
      ...(key !== undefined && key !== null ? { key } : {}),
    },
  };
}

// Control characters are what this looks for (a key or reference is one line of text).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function checkedText(value: string, field: string, max: number): string | { error: string } {
  const trimmed = value.trim();
  if (trimmed === '') return { error: `${field} must not be empty` };
  if (trimmed.length > max)
    return { error: `${field} must be at most ${max} characters (got ${trimmed.length})` };
  if (CONTROL.test(trimmed)) return { error: `${field} must not contain control characters` };
  if (/[\ud800-\udfff]/.test(trimmed.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) {
    return { error: `${field} must be valid Unicode text` };
  }
  return trimmed;
}

/** The models a mode's resolved config names as its answerers (whose wins a reference can expect). */
function rosterOf(mode: string, config: unknown): string[] {
  const c = isObject(config) ? config : {};
  const list = c[modeFacts(mode)?.roster.models ?? 'models'];
  return Array.isArray(list) ? list.filter((m): m is string => typeof m === 'string') : [];
}

/**
 * Checks an item's `reference` against its mode (a verdict for jury, a number or answer for
 * Delphi, a model of the roster for council, vote and debate) and its `key`; `keys` holds the
 * keys of the items before it (a key may appear once per batch).
 */
export function checkAnnotations(
  raw: { reference?: unknown; key?: unknown },
  request: { mode: string; config: unknown },
  keys: Map<string, number>,
  index: number,
): { ok: true; annotations: ItemAnnotations } | { ok: false; fields: FieldErrors } {
  const fields: FieldErrors = {};
  const annotations: ItemAnnotations = {};
  if (raw.reference !== undefined) {
    const reference = raw.reference;
    const { mode, config } = request;
    const kind = modeFacts(mode)?.reference ?? 'winner';
    if (kind === 'verdict') {
      const verdict = typeof reference === 'string' ? reference.trim().toUpperCase() : null;
      if (verdict === 'APPROVE' || verdict === 'REVISE' || verdict === 'REJECT')
        annotations.reference = verdict;
      else fields.reference = 'for jury, reference must be the expected verdict: APPROVE, REVISE or REJECT';
    } else if (kind === 'estimate') {
      const qualitative = isObject(config) && config.questionType === 'qualitative';
      // Issue 36: a text reference is an expected answer, so the question must be one with answers
      // (questionType "qualitative", or options to choose from); on a numeric question, or one
      // the facilitator classifies with nothing said, text that is not a number ("lots") is refused
      // rather than silently left out of the report.
      const answers =
        qualitative ||
        (isObject(config) &&
          config.questionType !== 'numeric' &&
          Array.isArray(config.options) &&
          config.options.length > 0);
      if (typeof reference === 'number') {
        if (Number.isFinite(reference) && !qualitative) annotations.reference = reference;
        else
          fields.reference = qualitative
            ? 'for a qualitative Delphi question, reference must be the expected answer as text'
            : 'reference must be a finite number';
      } else if (typeof reference === 'string') {
        const text = checkedText(reference, 'reference', REFERENCE_MAX_LENGTH);
        const asNumber = typeof text === 'string' && text !== '' ? Number(text) : Number.NaN;
        if (typeof text !== 'string') fields.reference = text.error;
        else if (!qualitative && Number.isFinite(asNumber)) annotations.reference = asNumber;
        else if (answers) annotations.reference = text;
        else
          fields.reference =
            isObject(config) && config.questionType === 'numeric'
              ? 'for a numeric Delphi question, reference must be the expected value as a number'
              : 'for Delphi, a reference that is not a number needs questionType "qualitative" (or options): ' +
                'give the expected value as a number, or say the question has text answers';
      } else
        fields.reference = 'for Delphi, reference must be the expected value (a number) or answer (text)';
    } else {
      const roster = rosterOf(mode, config);
      const text =
        typeof reference === 'string' ? checkedText(reference, 'reference', REFERENCE_MAX_LENGTH) : null;
      if (text === null)
        fields.reference = `for ${mode}, reference must be the model expected to win, as text`;
      else if (typeof text !== 'string') fields.reference = text.error;
      else if (!roster.includes(text))
        fields.reference = `for ${mode}, reference must be one of the item's models (${roster.join(', ')})`;
      else annotations.reference = text;
    }
  }
  if (raw.key !== undefined) {
    const key =
      typeof raw.key === 'number' && Number.isFinite(raw.key)
        ? String(raw.key)
        : typeof raw.key === 'string'
          ? checkedText(raw.key, 'key', KEY_MAX_LENGTH)
          : { error: 'key must be text (or a number) that names the item across batches' };
    if (typeof key !== 'string') fields.key = key.error;
    else if (keys.has(key))
      fields.key = `key "${key}" is already item ${keys.get(key)}'s: keys must be unique in a batch`;
    else {
      keys.set(key, index);
      annotations.key = key;
    }
  }
  return Object.keys(fields).length > 0 ? { ok: false, fields } : { ok: true, annotations };
}

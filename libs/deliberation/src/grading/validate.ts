import {
  CHOICE_MAX_OPTIONS,
  CHOICE_MIN_OPTIONS,
  CHOICE_OPTION_MAX_LENGTH,
  EXPECTED_MAX_LENGTH,
  GRADER_TYPES,
  MODEL_GRADER_MAX_JUDGES,
  NUMBER_EXTRACTIONS,
  TEXT_EXTRACTIONS,
  isModelId,
  type GraderSpec,
  type GraderType,
  type Grading,
} from '@conclave/contracts';
import type { FieldErrors } from '../engine/types';
import { choiceLetter } from './choice';
import { parseNumberText } from './numbers';
import { regexFlagsProblem, regexSafetyProblem } from './regex-guard';
import { normalizeText } from './text';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Each grader's own fields besides `type`. */
const GRADER_FIELDS: Record<GraderType, readonly string[]> = {
  exact: ['extract'],
  normalized: ['extract'],
  contains: ['extract', 'caseSensitive'],
  choice: ['options'],
  numeric: ['extract', 'absoluteTolerance', 'relativeTolerance'],
  regex: ['pattern', 'flags', 'group', 'extract'],
  model: ['judges'],
};

// Control characters other than tab and line breaks: an expected answer is text a person wrote.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function checkedText(value: string, field: string, max: number): string | { error: string } {
  const trimmed = value.trim();
  if (trimmed === '') return { error: `${field} must not be empty` };
  if (trimmed.length > max)
    return { error: `${field} must be at most ${max} characters (got ${trimmed.length})` };
  if (CONTROL.test(trimmed)) return { error: `${field} must not contain control characters` };
  if (LONE_SURROGATE.test(trimmed)) return { error: `${field} must be valid Unicode text` };
  return trimmed;
}

const show = (value: unknown): string => {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
};

export type GradingCheck = { ok: true; grading: Grading | null } | { ok: false; fields: FieldErrors };

/**
 * A request's `expected` and `grader` checked against each other (issue 37), with the field paths
 * the 400 names (`expected`, `grader`, `grader.pattern`, …; a batch prefixes `items[i].`). Neither
 * given: no grading. `expected` without `grader`: a number is graded `numeric`, text `normalized`.
 * The answer comes back in its grader's form: a number for `numeric`, a letter for `choice`,
 * trimmed text otherwise.
 */
export function checkGrading(raw: { expected?: unknown; grader?: unknown }): GradingCheck {
  const fields: FieldErrors = {};
  const expected = raw.expected ?? undefined;
  const given = raw.grader ?? undefined;
  if (expected === undefined && given === undefined) return { ok: true, grading: null };
  if (expected !== undefined && typeof expected !== 'string' && typeof expected !== 'number')
    return { ok: false, fields: { expected: 'expected must be the expected answer, as text or a number' } };
  if (typeof expected === 'number' && !Number.isFinite(expected))
    return { ok: false, fields: { expected: 'expected must be a finite number' } };
  let text: string | null = null;
  if (typeof expected === 'string') {
    const checked = checkedText(expected, 'expected', EXPECTED_MAX_LENGTH);
    if (typeof checked !== 'string') return { ok: false, fields: { expected: checked.error } };
    text = checked;
  } else if (typeof expected === 'number') text = String(expected);

  const spec: Record<string, unknown> =
    given === undefined
      ? { type: typeof expected === 'number' ? 'numeric' : 'normalized' }
      : isObject(given)
        ? given
        : {};
  if (given !== undefined && !isObject(given))
    return {
      ok: false,
      fields: { grader: `grader must be an object with a type: one of ${GRADER_TYPES.join(', ')}` },
    };
  const type = spec.type;
  if (typeof type !== 'string' || !(GRADER_TYPES as readonly string[]).includes(type))
    return { ok: false, fields: { 'grader.type': `grader.type must be one of ${GRADER_TYPES.join(', ')}` } };
  const graderType = type as GraderType;
  for (const key of Object.keys(spec)) {
    if (key !== 'type' && !GRADER_FIELDS[graderType].includes(key))
      Object.defineProperty(fields, `grader.${key}`, {
        value: `property ${key} should not exist on a ${graderType} grader (it takes ${GRADER_FIELDS[graderType].join(', ')})`,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  const needsExpected = !(graderType === 'regex' && spec.group === undefined);
  if (text === null && needsExpected)
    fields.expected = `expected is required with a ${graderType} grader: the answer the item is graded against`;

  const extract = spec.extract;
  const extractions: readonly string[] = graderType === 'numeric' ? NUMBER_EXTRACTIONS : TEXT_EXTRACTIONS;
  if (extract !== undefined && (typeof extract !== 'string' || !extractions.includes(extract)))
    fields['grader.extract'] = `grader.extract must be one of ${extractions.join(', ')}`;
  const extractField = extract === undefined ? {} : { extract };

  let grader: GraderSpec | null = null;
  let answer: string | number | null = text;
  switch (graderType) {
    case 'exact':
      grader = { type: 'exact', ...extractField } as GraderSpec;
      break;
    case 'normalized':
    case 'contains': {
      if (text !== null && normalizeText(text) === '')
        fields.expected = `for a ${graderType} grader, expected must have letters or digits once normalized (got ${show(text)})`;
      if (graderType === 'contains') {
        if (spec.caseSensitive !== undefined && typeof spec.caseSensitive !== 'boolean')
          fields['grader.caseSensitive'] = 'grader.caseSensitive must be true or false';
        grader = {
          type: 'contains',
          ...extractField,
          ...(spec.caseSensitive === undefined ? {} : { caseSensitive: spec.caseSensitive }),
        } as GraderSpec;
      } else grader = { type: 'normalized', ...extractField } as GraderSpec;
      break;
    }
    case 'numeric': {
      if (text !== null) {
        const value = typeof expected === 'number' ? expected : parseNumberText(text);
        if (value === null)
          fields.expected = `for a numeric grader, expected must be a number (such as 42, -3.5, 1,234.5, 1e3, 42% or $3), got ${show(text)}`;
        else answer = value;
      }
      const tolerances: Record<string, number> = {};
      for (const key of ['absoluteTolerance', 'relativeTolerance'] as const) {
        const v = spec[key];
        if (v === undefined) continue;
        if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
          fields[`grader.${key}`] = `grader.${key} must be a number of at least 0`;
        else tolerances[key] = v;
      }
      grader = { type: 'numeric', ...extractField, ...tolerances } as GraderSpec;
      break;
    }
    case 'choice': {
      const options = spec.options;
      if (
        !Array.isArray(options) ||
        options.length < CHOICE_MIN_OPTIONS ||
        options.length > CHOICE_MAX_OPTIONS
      ) {
        fields['grader.options'] =
          `grader.options must be a list of ${CHOICE_MIN_OPTIONS} to ${CHOICE_MAX_OPTIONS} option texts, lettered A, B, C… in order`;
        break;
      }
      const texts: string[] = [];
      options.forEach((option, i) => {
        const checked =
          typeof option === 'string'
            ? checkedText(option, `grader.options[${i}]`, CHOICE_OPTION_MAX_LENGTH)
            : { error: `grader.options[${i}] must be text` };
        if (typeof checked === 'string') texts.push(checked);
        else fields[`grader.options[${i}]`] = checked.error;
      });
      if (texts.length !== options.length) break;
      grader = { type: 'choice', options: texts };
      if (text !== null) {
        const last = choiceLetter(texts.length - 1);
        // A letter first (`b`, `(B)`, `B.`: read as B even when an option's text is "b", as the
        // dataset reader of issue 37 item 6 reads it), then the text of exactly one option.
        const letter = /^[([]?([A-Za-z])[)\]]?[.:]?$/.exec(text)?.[1]?.toUpperCase();
        const byText = texts.flatMap((o, i) => (normalizeText(o) === normalizeText(text) ? [i] : []));
        if (letter !== undefined && letter.charCodeAt(0) - 65 < texts.length) answer = letter;
        else if (byText.length === 1) answer = choiceLetter(byText[0]);
        else if (byText.length > 1)
          fields.expected = `expected ${show(text)} is the text of several options: give its letter (A–${last})`;
        else
          fields.expected = `for a choice grader, expected must be one of the options' letters (A–${last}) or one option's text, got ${show(text)}`;
      }
      break;
    }
    case 'regex': {
      const pattern = spec.pattern;
      const flags = spec.flags ?? '';
      if (typeof flags !== 'string') fields['grader.flags'] = 'grader.flags must be text, any of i, m, s, u';
      if (typeof pattern !== 'string') {
        fields['grader.pattern'] = 'grader.pattern must be a regular expression, as text';
        break;
      }
      if (typeof flags !== 'string') break;
      const problem = regexSafetyProblem(pattern, flags);
      if (problem !== null) {
        if (regexFlagsProblem(flags) !== null) fields['grader.flags'] = `grader.flags: ${problem}`;
        else fields['grader.pattern'] = `grader.pattern is refused: ${problem}`;
        break;
      }
      const group = spec.group;
      if (group !== undefined) {
        const probe = new RegExp(`(?:${pattern})|`, flags).exec('');
        const count = probe ? probe.length - 1 : 0;
        const names = Object.keys(probe?.groups ?? {});
        if (typeof group === 'number') {
          if (!Number.isInteger(group) || group < 0 || group > count)
            fields['grader.group'] =
              `grader.group must be a group of the pattern: 0 (the whole match) to ${count}`;
        } else if (typeof group === 'string') {
          if (!names.includes(group))
            fields['grader.group'] = names.length
              ? `grader.group must name a group of the pattern (${names.join(', ')})`
              : 'grader.group names a group the pattern does not have (it has no named groups)';
        } else fields['grader.group'] = 'grader.group must be a group number or a group name';
      }
      grader = {
        type: 'regex',
        pattern,
        ...(flags === '' ? {} : { flags }),
        ...(group === undefined ? {} : { group: group as number | string }),
        ...extractField,
      } as GraderSpec;
      break;
    }
    case 'model': {
      const judges = spec.judges;
      if (!Array.isArray(judges) || judges.length < 1 || judges.length > MODEL_GRADER_MAX_JUDGES) {
        fields['grader.judges'] =
          `grader.judges must be a list of 1 to ${MODEL_GRADER_MAX_JUDGES} model ids (provider/name)`;
        break;
      }
      judges.forEach((judge, i) => {
        if (!isModelId(judge))
          fields[`grader.judges[${i}]`] = `grader.judges[${i}] must be a model id of the form provider/name`;
        else if (judges.indexOf(judge) !== i) fields[`grader.judges[${i}]`] = `${judge} is already a judge`;
      });
      grader = { type: 'model', judges: judges as string[] };
      break;
    }
  }
  if (Object.keys(fields).length > 0 || grader === null) return { ok: false, fields };
  return { ok: true, grading: { expected: answer, grader } };
}

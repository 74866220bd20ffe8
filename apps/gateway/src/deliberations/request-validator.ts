import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { QUESTION_MAX_LENGTH, type Grading, type ModeName } from '@conclave/contracts';
import {
  checkGrading,
  modeDefinition,
  type AnyModeDefinition,
  type FieldErrors,
  type ResolvedConfig,
} from '@conclave/deliberation';
import { getMetadataStorage, validate, type ValidationError } from 'class-validator';
import { CONFIG } from '@conclave/platform';
import { CreateDeliberationDto } from './create-deliberation.dto';

export interface ValidatedRequest {
  question: string;
  mode: ModeName;
  definition: AnyModeDefinition;
  conversationId?: string;
  config: unknown;
  /** Issue 37: the expected answer and its grader (`expected`, `grader`), checked against each other. */
  grading?: Grading;
}

export type ValidationOutcome = { ok: true; request: ValidatedRequest } | { ok: false; fields: FieldErrors };

const TOP_LEVEL_COUNCIL_FIELDS = ['councilModels', 'chairmanModel'] as const;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function flatten(errors: ValidationError[], prefix: string, into: FieldErrors): FieldErrors {
  for (const error of errors) {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints) into[path] = Object.values(error.constraints).join('; ');
    if (error.children?.length) flatten(error.children, path, into);
  }
  return into;
}

/** Field errors as own properties, even for a key such as `__proto__`. */
const fieldErrors = (entries: [string, string][]): FieldErrors => Object.fromEntries(entries);

/** The properties a class-validator schema declares. */
export const knownProperties = (schema: new () => object): Set<string> =>
  new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(schema, '', true, false)
      .map((m) => m.propertyName),
  );

const join = (prefix: string, key: string) => (prefix ? `${prefix}.${key}` : key);

/**
 * Unknown keys are refused before class-transformer sees them: keys such as `constructor` or
 * `__proto__` would otherwise be copied onto the DTO instance and slip past the whitelist.
 */
async function check(
  schema: new () => object,
  value: Record<string, unknown>,
  prefix: string,
): Promise<FieldErrors> {
  const known = knownProperties(schema);
  const unknown = Object.keys(value).filter((key) => !known.has(key));
  // Only known keys are copied, onto a fresh instance: no transformation that could call into
  // the payload (class-transformer would run `new value.constructor()` on nested objects).
  const instance = Object.assign(
    new schema(),
    Object.fromEntries([...known].filter((k) => k in value).map((k) => [k, value[k]])),
  );
  const errors = await validate(instance, { forbidUnknownValues: true, stopAtFirstError: true });
  return fieldErrors([
    ...unknown.map((key): [string, string] => [join(prefix, key), `property ${key} should not exist`]),
    ...Object.entries(flatten(errors, prefix, {})),
  ]);
}

/** Far deeper than any valid request (modeConfig.jurorModels[0] is three levels down). */
export const MAX_REQUEST_DEPTH = 32;

/**
 * Whether objects or arrays nest deeper than `limit`, found without recursion: the checks below
 * recurse, and a few thousand levels of `[[[...]]]` would otherwise overflow the stack (a 500).
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop() as [unknown, number];
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  return false;
}

/** A UTF-16 surrogate without its partner: JSON can carry one (`"\ud800"`), jsonb refuses it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * PostgreSQL text and jsonb cannot hold NUL characters, nor jsonb an unpaired surrogate (the mode's
 * config is stored as jsonb): name every string that has one.
 */
function nulCharacters(value: unknown, at: string): [string, string][] {
  if (typeof value === 'string') {
    const field = at || 'body';
    if (value.includes('\u0000')) return [[field, `${field} must not contain NUL characters`]];
    if (LONE_SURROGATE.test(value)) {
      return [[field, `${field} must be valid Unicode text (it contains an unpaired surrogate)`]];
    }
    return [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => nulCharacters(item, `${at}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.keys(value).flatMap((key) =>
      nulCharacters((value as Record<string, unknown>)[key], join(at, key)),
    );
  }
  return [];
}

/** The whole of 00-shared.md §1 and the mode's section D: every offending field, named. */
@Injectable()
export class RequestValidator {
  constructor(@Inject(CONFIG) private readonly config: ConclaveConfig) {}

  async validate(body: unknown): Promise<ValidationOutcome> {
    if (!isPlainObject(body)) {
      return { ok: false, fields: { body: 'the request body must be a JSON object' } };
    }
    if (nestedDeeperThan(body, MAX_REQUEST_DEPTH)) {
      return {
        ok: false,
        fields: { body: `the request nests objects or arrays more than ${MAX_REQUEST_DEPTH} levels deep` },
      };
    }
    // A Map, so that a field named `__proto__` is reported like any other.
    const fields = new Map(Object.entries(await check(CreateDeliberationDto, body, '')));
    const mode = (body.mode ?? 'council') as ModeName;
    const definition = fields.has('mode') ? undefined : modeDefinition(mode);
    if (!fields.has('mode') && !definition)
      fields.set('mode', `mode "${mode}" is not available in this version`);
    const questionRequired = definition?.questionRequiredMessage ?? 'Question is required';
    if (body.question === undefined || body.question === null) fields.set('question', questionRequired);
    else if (typeof body.question === 'string' && !fields.has('question')) {
      const trimmed = body.question.trim();
      if (trimmed.length === 0) fields.set('question', questionRequired);
      else if (trimmed.length > QUESTION_MAX_LENGTH) {
        fields.set(
          'question',
          `question must be at most ${QUESTION_MAX_LENGTH} characters (got ${trimmed.length})`,
        );
      }
    }
    const add = (errors: FieldErrors) => Object.entries(errors).forEach(([k, v]) => fields.set(k, v));
    if (definition) {
      // An absent modeConfig is checked as {}, so a mode's required options are named too.
      if (body.modeConfig === undefined || isPlainObject(body.modeConfig)) {
        add(await check(definition.configSchema, body.modeConfig ?? {}, 'modeConfig'));
      }
      const topLevel = Object.fromEntries(
        TOP_LEVEL_COUNCIL_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]),
      );
      if (definition.facts?.topLevelRoster) {
        add(await check(definition.configSchema, topLevel, ''));
      } else {
        for (const field of Object.keys(topLevel)) {
          fields.set(field, `${field} at top level is for council only; give ${mode}'s roster in modeConfig`);
        }
      }
    }
    // Issue 37: the expected answer against its grader, stored for the engine to grade every answer.
    const grading = checkGrading({ expected: body.expected, grader: body.grader });
    // The model grader's judges (1 to 5 model ids, each checked like a roster's) are asked by the
    // engine after each answer stage, as calls of that stage (README "Graded items").
    if (!grading.ok) add(grading.fields);
    for (const [field, message] of nulCharacters(body, '')) fields.set(field, message);
    // Cross-field rules (a foreman who is a juror, ...) are named together with every other problem,
    // so the mode resolves the config even when some fields are already known to be wrong.
    let resolved: ResolvedConfig<unknown> | null = null;
    if (definition && (body.modeConfig === undefined || isPlainObject(body.modeConfig))) {
      try {
        resolved = definition.resolveConfig(
          {
            question: typeof body.question === 'string' ? body.question.trim() : '',
            modeConfig: body.modeConfig as Record<string, unknown> | undefined,
            councilModels: body.councilModels as string[] | undefined,
            chairmanModel: body.chairmanModel as string | undefined,
          },
          this.config.defaults,
        );
      } catch {
        // a field of the wrong type, already named above
      }
    }
    if (resolved && !resolved.ok) {
      for (const [field, message] of Object.entries(resolved.fields))
        if (!fields.has(field)) fields.set(field, message);
    }
    if (fields.size > 0 || !definition || !resolved?.ok)
      return { ok: false, fields: fieldErrors([...fields]) };

    return {
      ok: true,
      request: {
        question: (body.question as string).trim(),
        mode,
        definition,
        conversationId: body.conversationId as string | undefined,
        config: resolved.config,
        ...(grading.ok && grading.grading ? { grading: grading.grading } : {}),
      },
    };
  }
}

import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { QUESTION_MAX_LENGTH, type ModeName } from '@conclave/contracts';
import { modeDefinition, type AnyModeDefinition, type FieldErrors } from '@conclave/deliberation';
import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import { CONFIG } from '../tokens';
import { CreateDeliberationDto } from './create-deliberation.dto';

export interface ValidatedRequest {
  question: string;
  mode: ModeName;
  definition: AnyModeDefinition;
  conversationId?: string;
  config: unknown;
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

async function check(
  schema: new () => object,
  value: Record<string, unknown>,
  prefix: string,
): Promise<FieldErrors> {
  const errors = await validate(plainToInstance(schema, value), {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
  });
  return flatten(errors, prefix, {});
}

/** The whole of 00-shared.md §1 and the mode's section D: every offending field, named. */
@Injectable()
export class RequestValidator {
  constructor(@Inject(CONFIG) private readonly config: ConclaveConfig) {}

  async validate(body: unknown): Promise<ValidationOutcome> {
    if (!isPlainObject(body))
      return { ok: false, fields: { body: 'the request body must be a JSON object' } };
    const fields = await check(CreateDeliberationDto, body, '');
    if (typeof body.question === 'string' && !fields.question) {
      const trimmed = body.question.trim();
      if (trimmed.length === 0) fields.question = 'Question is required';
      else if (trimmed.length > QUESTION_MAX_LENGTH) {
        fields.question = `question must be at most ${QUESTION_MAX_LENGTH} characters (got ${trimmed.length})`;
      }
    }
    const mode = (body.mode ?? 'council') as ModeName;
    const definition = fields.mode ? undefined : modeDefinition(mode);
    if (!fields.mode && !definition) fields.mode = `mode "${mode}" is not available in this version`;
    if (definition) {
      if (isPlainObject(body.modeConfig)) {
        Object.assign(fields, await check(definition.configSchema, body.modeConfig, 'modeConfig'));
      }
      const topLevel = Object.fromEntries(
        TOP_LEVEL_COUNCIL_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]),
      );
      if (mode === 'council') {
        Object.assign(fields, await check(definition.configSchema, topLevel, ''));
      } else {
        for (const field of Object.keys(topLevel)) {
          fields[field] = `${field} at top level is for council only; give ${mode}'s roster in modeConfig`;
        }
      }
    }
    if (Object.keys(fields).length > 0 || !definition) return { ok: false, fields };

    const resolved = definition.resolveConfig(
      {
        question: (body.question as string).trim(),
        modeConfig: body.modeConfig as Record<string, unknown> | undefined,
        councilModels: body.councilModels as string[] | undefined,
        chairmanModel: body.chairmanModel as string | undefined,
      },
      this.config.defaults,
    );
    if (!resolved.ok) return { ok: false, fields: resolved.fields };
    return {
      ok: true,
      request: {
        question: (body.question as string).trim(),
        mode,
        definition,
        conversationId: body.conversationId as string | undefined,
        config: resolved.config,
      },
    };
  }
}

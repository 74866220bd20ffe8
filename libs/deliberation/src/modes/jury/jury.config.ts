import type { JuryConfig } from '@conclave/contracts';
import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import {
  IsModelId,
  ModeOptionsDto,
  PanelOption,
  fallbackOptionRule,
  gateOptionRules,
  resolveResilience,
  timeoutOptionRule,
  type FieldErrors,
  type ModeConfigDefinition,
  type ModeDefaults,
  type Range,
  type RequestEnvelope,
  type ResolvedConfig,
} from '../config-kit';

export const JURY_MIN_JURORS = 3;
export const JURY_MAX_JURORS = 6;
export const JURY_CONTENT_MAX_LENGTH = 200_000;
const TIMEOUT_MS: Range = { min: 10_000, max: 300_000, unit: 'ms' };

/**
 * `modeConfig` of a jury request (03-jury.md §D). The same juror model may sit twice, as 03-jury.md's
 * validation allows: two calls, two jurors told apart by their seat in the roster.
 */
export class JuryConfigDto extends ModeOptionsDto({
  timeout: TIMEOUT_MS,
  timeoutType: 'number',
  maxMembers: JURY_MAX_JURORS,
  fallbacks: 'foremanFallbacks',
}) {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @MaxLength(JURY_CONTENT_MAX_LENGTH)
  @MinLength(1, { message: 'Content to evaluate is required' })
  @IsString({ message: 'Content to evaluate is required' })
  content: string;

  @MaxLength(20_000)
  @IsString()
  @IsOptional()
  originalQuestion?: string;

  @PanelOption({
    min: JURY_MIN_JURORS,
    max: JURY_MAX_JURORS,
    tooFew: `Jury mode requires at least ${JURY_MIN_JURORS} juror models`,
    tooMany: `Maximum ${JURY_MAX_JURORS} juror models allowed`,
  })
  jurorModels?: string[];

  @IsModelId()
  @MinLength(1, { message: 'Foreman model is required' })
  @IsString({ message: 'Foreman model is required' })
  @IsOptional()
  foremanModel?: string;
}

/** 03-jury.md §F: fewer than 2 successful jurors end the deliberation. */
export const JURY_MIN_SUCCESSFUL_JURORS = 2;

/** What a jury request that names none of these gets (the content it must name). */
export const juryDefaults = (
  defaults: ModeDefaults,
): Pick<JuryConfig, 'jurorModels' | 'foremanModel' | 'timeoutMs'> => ({
  jurorModels: defaults.jury.jurorModels,
  foremanModel: defaults.jury.foremanModel,
  timeoutMs: defaults.timeoutMs,
});

export function resolveJuryConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<JuryConfig> {
  const given = (request.modeConfig ?? {}) as Partial<JuryConfigDto>;
  const fields: FieldErrors = {};
  if (typeof given.content !== 'string' || given.content.trim().length === 0) {
    fields['modeConfig.content'] = 'Content to evaluate is required';
  }
  const fallback = juryDefaults(defaults);
  const jurorModels = given.jurorModels ?? fallback.jurorModels;
  const foremanModel = given.foremanModel ?? fallback.foremanModel;
  if (jurorModels.includes(foremanModel)) {
    fields['modeConfig.foremanModel'] = 'Foreman model must not be one of the juror models';
  }
  const resilience = resolveResilience(
    given,
    { size: jurorModels.length, members: 'juror models', minimum: JURY_MIN_SUCCESSFUL_JURORS },
    {
      option: 'foremanFallbacks',
      model: foremanModel,
      field: 'foremanModel',
      excluded: { models: jurorModels, why: 'it is a juror model, and the foreman must be impartial' },
    },
    fields,
  );
  if (Object.keys(fields).length > 0 || typeof given.content !== 'string') return { ok: false, fields };
  return {
    ok: true,
    config: {
      content: given.content,
      ...(given.originalQuestion ? { originalQuestion: given.originalQuestion } : {}),
      jurorModels,
      foremanModel,
      timeoutMs: Math.round(given.timeoutMs ?? fallback.timeoutMs),
      ...resilience,
    },
  };
}

export const juryConfig: ModeConfigDefinition<JuryConfig> = {
  schema: JuryConfigDto,
  roster: [
    { role: 'juror', field: 'modeConfig.jurorModels', min: JURY_MIN_JURORS, max: JURY_MAX_JURORS },
    { role: 'foreman', field: 'modeConfig.foremanModel', min: 1, max: 1 },
  ],
  options: [
    { field: 'content', type: 'string', description: 'the content under evaluation (required)' },
    { field: 'originalQuestion', type: 'string', description: 'the question the content was answering' },
    timeoutOptionRule(TIMEOUT_MS, 'integer'),
    ...gateOptionRules('juror models', JURY_MIN_SUCCESSFUL_JURORS),
    fallbackOptionRule('foremanFallbacks', 'foreman'),
  ],
  defaults: juryDefaults,
  resolve: resolveJuryConfig,
};

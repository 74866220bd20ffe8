import type { DebateConfig } from '@conclave/contracts';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsNumber, IsOptional, Max, Min } from 'class-validator';
import type { FieldErrors, ModeDefaults, RequestEnvelope, ResolvedConfig } from '../../engine/types';
import { IsModelId } from '../../shared/validation';
import type { ModeConfigDefinition, Range } from '../mode-config';
import {
  QuorumOption,
  StageDeadlineOption,
  gateOptionRules,
  resolveGateOptions,
} from '../../shared/resilience';

export const DEBATE_MIN_MODELS = 3;
export const DEBATE_MAX_MODELS = 6;
const TIMEOUT_MS: Range = { min: 10_000, max: 600_000, unit: 'ms' };

/** `modeConfig` of a debate request (04-debate.md §D). The same model may appear twice. */
export class DebateConfigDto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @IsModelId({ each: true })
  @ArrayMaxSize(DEBATE_MAX_MODELS, { message: `Maximum ${DEBATE_MAX_MODELS} models allowed` })
  @ArrayMinSize(DEBATE_MIN_MODELS, { message: `Debate mode requires at least ${DEBATE_MIN_MODELS} models` })
  @IsArray()
  @IsOptional()
  models?: string[];

  @Max(TIMEOUT_MS.max)
  @Min(TIMEOUT_MS.min)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  timeoutMs?: number;

  @QuorumOption(DEBATE_MAX_MODELS)
  quorum?: number;

  @StageDeadlineOption()
  stageDeadlineMs?: number;
}

/** 04-debate.md §F: fewer than 2 first answers end the debate. */
export const DEBATE_MIN_ANSWERS = 2;

/** What a debate request that names none of these gets. */
export const debateDefaults = (defaults: ModeDefaults): DebateConfig => ({
  models: defaults.debate.models,
  timeoutMs: defaults.timeoutMs,
});

export function resolveDebateConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<DebateConfig> {
  const given = (request.modeConfig ?? {}) as DebateConfigDto;
  const fallback = debateDefaults(defaults);
  const models = given.models ?? fallback.models;
  const fields: FieldErrors = {};
  const gate = resolveGateOptions(
    given,
    { size: models.length, members: 'debating models', minimum: DEBATE_MIN_ANSWERS },
    fields,
  );
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    config: {
      models,
      timeoutMs: Math.round(given.timeoutMs ?? fallback.timeoutMs),
      ...gate,
    },
  };
}

export const debateConfig: ModeConfigDefinition<DebateConfig> = {
  schema: DebateConfigDto,
  roster: [{ role: 'debater', field: 'modeConfig.models', min: DEBATE_MIN_MODELS, max: DEBATE_MAX_MODELS }],
  options: [
    { field: 'timeoutMs', type: 'integer', description: 'per-call timeout', range: TIMEOUT_MS },
    ...gateOptionRules('debating models', DEBATE_MIN_ANSWERS),
  ],
  defaults: debateDefaults,
  resolve: resolveDebateConfig,
};

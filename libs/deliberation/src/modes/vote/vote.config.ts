import type { VoteConfig } from '@conclave/contracts';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsNumber, IsOptional, Max, Min } from 'class-validator';
import type { FieldErrors, ModeDefaults, RequestEnvelope, ResolvedConfig } from '../../engine/types';
import { IsModelId } from '../../shared/validation';
import type { ModeConfigDefinition, Range } from '../mode-config';
import {
  FallbacksOption,
  QuorumOption,
  StageDeadlineOption,
  fallbackOptionRule,
  gateOptionRules,
  resolveFallbacks,
  resolveGateOptions,
} from '../../shared/resilience';

export const VOTE_MIN_MODELS = 3;
export const VOTE_MAX_MODELS = 6;
const TIMEOUT_MS: Range = { min: 10_000, max: 600_000, unit: 'ms' };

/** `modeConfig` of a vote request (02-vote.md §D). */
export class VoteConfigDto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @IsModelId({ each: true })
  @ArrayMaxSize(VOTE_MAX_MODELS, { message: `Maximum ${VOTE_MAX_MODELS} models allowed` })
  @ArrayMinSize(VOTE_MIN_MODELS, { message: `Vote mode requires at least ${VOTE_MIN_MODELS} models` })
  @IsArray()
  @IsOptional()
  models?: string[];

  @IsModelId()
  @IsOptional()
  chairmanModel?: string;

  @Max(TIMEOUT_MS.max)
  @Min(TIMEOUT_MS.min)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  timeoutMs?: number;

  @QuorumOption(VOTE_MAX_MODELS)
  quorum?: number;

  @StageDeadlineOption()
  stageDeadlineMs?: number;

  @FallbacksOption()
  chairmanFallbacks?: string[];
}

/** 02-vote.md: fewer than 2 answers end the vote. */
export const VOTE_MIN_ANSWERS = 2;

/** The chairman may be a voter; without one named, the first model breaks ties. */
const chairmanOf = (models: readonly string[]): string => models[0];

/** What a vote request that names none of these gets. */
export const voteDefaults = (defaults: ModeDefaults): VoteConfig => ({
  models: defaults.vote.models,
  chairmanModel: chairmanOf(defaults.vote.models),
  timeoutMs: defaults.timeoutMs,
});

export function resolveVoteConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<VoteConfig> {
  const given = (request.modeConfig ?? {}) as VoteConfigDto;
  const fallback = voteDefaults(defaults);
  const models = given.models ?? fallback.models;
  const chairmanModel = given.chairmanModel ?? chairmanOf(models);
  const fields: FieldErrors = {};
  const gate = resolveGateOptions(
    given,
    { size: models.length, members: 'voting models', minimum: VOTE_MIN_ANSWERS },
    fields,
  );
  const chairmanFallbacks = resolveFallbacks(
    'chairmanFallbacks',
    given.chairmanFallbacks,
    { model: chairmanModel, field: 'chairmanModel' },
    fields,
  );
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    config: {
      models,
      chairmanModel,
      timeoutMs: Math.round(given.timeoutMs ?? fallback.timeoutMs),
      ...gate,
      ...(chairmanFallbacks ? { chairmanFallbacks } : {}),
    },
  };
}

export const voteConfig: ModeConfigDefinition<VoteConfig> = {
  schema: VoteConfigDto,
  roster: [
    { role: 'voter', field: 'modeConfig.models', min: VOTE_MIN_MODELS, max: VOTE_MAX_MODELS },
    { role: 'chairman', field: 'modeConfig.chairmanModel', min: 0, max: 1 },
  ],
  options: [
    { field: 'timeoutMs', type: 'number', description: 'per-call timeout', range: TIMEOUT_MS },
    ...gateOptionRules('voting models', VOTE_MIN_ANSWERS),
    fallbackOptionRule('chairmanFallbacks', 'tiebreaking chairman'),
  ],
  defaults: voteDefaults,
  resolve: resolveVoteConfig,
};

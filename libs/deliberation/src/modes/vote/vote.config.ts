import type { VoteConfig } from '@conclave/contracts';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsNumber, IsOptional, Max, Min } from 'class-validator';
import type { ModeDefaults, RequestEnvelope, ResolvedConfig } from '../../engine/types';
import { IsModelId } from '../../shared/validation';

export const VOTE_MIN_MODELS = 3;
export const VOTE_MAX_MODELS = 6;

/** `modeConfig` of a vote request (02-vote.md §D). */
export class VoteConfigDto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @IsModelId({ each: true })
  @ArrayMaxSize(VOTE_MAX_MODELS, { message: 'Maximum 6 models allowed' })
  @ArrayMinSize(VOTE_MIN_MODELS, { message: 'Vote mode requires at least 3 models' })
  @IsArray()
  @IsOptional()
  models?: string[];

  @IsModelId()
  @IsOptional()
  chairmanModel?: string;

  @Max(600_000)
  @Min(10_000)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  timeoutMs?: number;
}

export function resolveVoteConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<VoteConfig> {
  const given = (request.modeConfig ?? {}) as VoteConfigDto;
  const models = given.models ?? defaults.vote.models;
  return {
    ok: true,
    config: {
      models,
      // The chairman may be a voter; without one named, the first model breaks ties.
      chairmanModel: given.chairmanModel ?? models[0],
      timeoutMs: Math.round(given.timeoutMs ?? defaults.timeoutMs),
    },
  };
}

import type { DebateConfig } from '@conclave/contracts';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsNumber, IsOptional, Max, Min } from 'class-validator';
import type { ModeDefaults, RequestEnvelope, ResolvedConfig } from '../../engine/types';
import { IsModelId } from '../../shared/validation';

export const DEBATE_MIN_MODELS = 3;
export const DEBATE_MAX_MODELS = 6;

/** `modeConfig` of a debate request (04-debate.md §D). The same model may appear twice. */
export class DebateConfigDto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @IsModelId({ each: true })
  @ArrayMaxSize(DEBATE_MAX_MODELS, { message: 'Maximum 6 models allowed' })
  @ArrayMinSize(DEBATE_MIN_MODELS, { message: 'Debate mode requires at least 3 models' })
  @IsArray()
  @IsOptional()
  models?: string[];

  @Max(600_000)
  @Min(10_000)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  timeoutMs?: number;
}

export function resolveDebateConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<DebateConfig> {
  const given = (request.modeConfig ?? {}) as DebateConfigDto;
  return {
    ok: true,
    config: {
      models: given.models ?? defaults.debate.models,
      timeoutMs: Math.round(given.timeoutMs ?? defaults.timeoutMs),
    },
  };
}

import type { CouncilConfig } from '@conclave/contracts';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsInt,
  IsOptional,
  Max,
  Min,
} from 'class-validator';
import { IsModelId } from '../../shared/validation';
import type { FieldErrors, ModeDefaults, RequestEnvelope, ResolvedConfig } from '../../engine/types';

export const COUNCIL_MIN_MODELS = 2;
export const COUNCIL_MAX_MODELS = 6;

/** `modeConfig` of a council request (and the top-level `councilModels` / `chairmanModel`). */
export class CouncilConfigDto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @IsModelId({ each: true })
  @ArrayUnique({ message: 'councilModels must not name the same model twice' })
  @ArrayMaxSize(COUNCIL_MAX_MODELS)
  @ArrayMinSize(COUNCIL_MIN_MODELS)
  @IsArray()
  @IsOptional()
  councilModels?: string[];

  @IsModelId()
  @IsOptional()
  chairmanModel?: string;

  @Max(600_000)
  @Min(1000)
  @IsInt()
  @IsOptional()
  timeoutMs?: number;
}

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, i) => item === b[i]);

export function resolveCouncilConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<CouncilConfig> {
  const inConfig = (request.modeConfig ?? {}) as CouncilConfigDto;
  const fields: FieldErrors = {};
  if (
    request.councilModels &&
    inConfig.councilModels &&
    !sameList(request.councilModels, inConfig.councilModels)
  ) {
    fields.councilModels =
      'councilModels is given both at top level and in modeConfig, with different values';
  }
  if (request.chairmanModel && inConfig.chairmanModel && request.chairmanModel !== inConfig.chairmanModel) {
    fields.chairmanModel =
      'chairmanModel is given both at top level and in modeConfig, with different values';
  }
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    config: {
      councilModels: request.councilModels ?? inConfig.councilModels ?? defaults.council.councilModels,
      chairmanModel: request.chairmanModel ?? inConfig.chairmanModel ?? defaults.council.chairmanModel,
      timeoutMs: inConfig.timeoutMs ?? defaults.timeoutMs,
    },
  };
}

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

export const COUNCIL_MIN_MODELS = 2;
export const COUNCIL_MAX_MODELS = 6;
const TIMEOUT_MS: Range = { min: 1000, max: 600_000, unit: 'ms' };

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

  @Max(TIMEOUT_MS.max)
  @Min(TIMEOUT_MS.min)
  @IsInt()
  @IsOptional()
  timeoutMs?: number;

  @QuorumOption(COUNCIL_MAX_MODELS)
  quorum?: number;

  @StageDeadlineOption()
  stageDeadlineMs?: number;

  @FallbacksOption()
  chairmanFallbacks?: string[];
}

/** What a council request that names none of these gets. */
export const councilDefaults = (defaults: ModeDefaults): CouncilConfig => ({
  councilModels: defaults.council.councilModels,
  chairmanModel: defaults.council.chairmanModel,
  timeoutMs: defaults.timeoutMs,
});

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
  const fallback = councilDefaults(defaults);
  const councilModels = request.councilModels ?? inConfig.councilModels ?? fallback.councilModels;
  const chairmanModel = request.chairmanModel ?? inConfig.chairmanModel ?? fallback.chairmanModel;
  const gate = resolveGateOptions(
    inConfig,
    { size: councilModels.length, members: 'council models', minimum: COUNCIL_MIN_MODELS },
    fields,
  );
  const chairmanFallbacks = resolveFallbacks(
    'chairmanFallbacks',
    inConfig.chairmanFallbacks,
    { model: chairmanModel, field: 'chairmanModel' },
    fields,
  );
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    config: {
      councilModels,
      chairmanModel,
      timeoutMs: inConfig.timeoutMs ?? fallback.timeoutMs,
      ...gate,
      ...(chairmanFallbacks ? { chairmanFallbacks } : {}),
    },
  };
}

export const councilConfig: ModeConfigDefinition<CouncilConfig> = {
  schema: CouncilConfigDto,
  roster: [
    { role: 'council', field: 'councilModels', min: COUNCIL_MIN_MODELS, max: COUNCIL_MAX_MODELS },
    { role: 'chairman', field: 'chairmanModel', min: 1, max: 1 },
  ],
  options: [
    { field: 'timeoutMs', type: 'integer', description: 'per-call timeout', range: TIMEOUT_MS },
    ...gateOptionRules('council models', COUNCIL_MIN_MODELS),
    fallbackOptionRule('chairmanFallbacks', 'chairman'),
  ],
  defaults: councilDefaults,
  resolve: resolveCouncilConfig,
};

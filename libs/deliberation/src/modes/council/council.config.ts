import type { CouncilConfig } from '@conclave/contracts';
import {
  SeatOption,
  modeOptions,
  type FieldErrors,
  type ModeConfigDefinition,
  type ModeDefaults,
  type RequestEnvelope,
  type ResolvedConfig,
} from '../config-kit';

export const COUNCIL_MIN_MODELS = 2;
export const COUNCIL_MAX_MODELS = 6;

const COMMON = modeOptions({
  panel: { role: 'council', field: 'councilModels', min: COUNCIL_MIN_MODELS, max: COUNCIL_MAX_MODELS },
  seat: { role: 'chairman', field: 'chairmanModel', min: 1, max: 1 },
  gate: { members: 'council models', minimum: COUNCIL_MIN_MODELS },
  fallbacks: { option: 'chairmanFallbacks', seat: 'chairman' },
  timeout: { min: 1000, max: 600_000, unit: 'ms' },
  timeoutType: 'integer',
});

/** `modeConfig` of a council request (and the top-level `councilModels` / `chairmanModel`). */
export class CouncilConfigDto extends COMMON.Dto {
  @COMMON.Panel({ unique: 'councilModels must not name the same model twice' })
  councilModels?: string[];

  @SeatOption()
  chairmanModel?: string;
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
  const resilience = COMMON.resolve(inConfig, councilModels, chairmanModel, fields);
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    config: {
      councilModels,
      chairmanModel,
      timeoutMs: inConfig.timeoutMs ?? fallback.timeoutMs,
      ...resilience,
    },
  };
}

export const councilConfig: ModeConfigDefinition<CouncilConfig> = {
  schema: CouncilConfigDto,
  roster: COMMON.roster,
  options: COMMON.rules,
  defaults: councilDefaults,
  resolve: resolveCouncilConfig,
};

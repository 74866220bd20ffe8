import type { CouncilConfig } from '@conclave/contracts';
import {
  ModeOptionsDto,
  PanelOption,
  SeatOption,
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

export const COUNCIL_MIN_MODELS = 2;
export const COUNCIL_MAX_MODELS = 6;
const TIMEOUT_MS: Range = { min: 1000, max: 600_000, unit: 'ms' };

/** `modeConfig` of a council request (and the top-level `councilModels` / `chairmanModel`). */
export class CouncilConfigDto extends ModeOptionsDto({
  timeout: TIMEOUT_MS,
  timeoutType: 'integer',
  maxMembers: COUNCIL_MAX_MODELS,
  fallbacks: 'chairmanFallbacks',
}) {
  @PanelOption({
    min: COUNCIL_MIN_MODELS,
    max: COUNCIL_MAX_MODELS,
    unique: 'councilModels must not name the same model twice',
  })
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
  const resilience = resolveResilience(
    inConfig,
    { size: councilModels.length, members: 'council models', minimum: COUNCIL_MIN_MODELS },
    { option: 'chairmanFallbacks', model: chairmanModel, field: 'chairmanModel' },
    fields,
  );
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
  roster: [
    { role: 'council', field: 'councilModels', min: COUNCIL_MIN_MODELS, max: COUNCIL_MAX_MODELS },
    { role: 'chairman', field: 'chairmanModel', min: 1, max: 1 },
  ],
  options: [
    timeoutOptionRule(TIMEOUT_MS, 'integer'),
    ...gateOptionRules('council models', COUNCIL_MIN_MODELS),
    fallbackOptionRule('chairmanFallbacks', 'chairman'),
  ],
  defaults: councilDefaults,
  resolve: resolveCouncilConfig,
};

import type { CouncilConfig } from '@conclave/contracts';
import { SeatOption, modeOptions, type ModeConfigDefinition } from '../config-kit';

export const COUNCIL_MIN_MODELS = 2;
export const COUNCIL_MAX_MODELS = 6;
/** The fewest first answers a council goes on to rank; fewer end it. */
export const COUNCIL_MIN_RESPONSES = 2;

const COMMON = modeOptions({
  panel: { role: 'council', field: 'councilModels', min: COUNCIL_MIN_MODELS, max: COUNCIL_MAX_MODELS },
  seat: { role: 'chairman', field: 'chairmanModel', min: 1, max: 1 },
  gate: { members: 'council models', minimum: COUNCIL_MIN_RESPONSES },
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

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, i) => item === b[i]);

/** The roster may be named at top level or in modeConfig: both, only if they agree. */
export const councilConfig: ModeConfigDefinition<CouncilConfig> = COMMON.define({
  schema: CouncilConfigDto,
  /** What a council request that names none of these gets. */
  defaults: (defaults) => ({
    councilModels: defaults.council.councilModels,
    chairmanModel: defaults.council.chairmanModel,
    timeoutMs: defaults.timeoutMs,
  }),
  resolve: (inConfig, fallback, problems, request) => {
    if (
      request.councilModels &&
      inConfig.councilModels &&
      !sameList(request.councilModels, inConfig.councilModels)
    ) {
      problems.councilModels =
        'councilModels is given both at top level and in modeConfig, with different values';
    }
    if (request.chairmanModel && inConfig.chairmanModel && request.chairmanModel !== inConfig.chairmanModel) {
      problems.chairmanModel =
        'chairmanModel is given both at top level and in modeConfig, with different values';
    }
    if (Object.keys(problems).length > 0) return null;
    const councilModels = request.councilModels ?? inConfig.councilModels ?? fallback.councilModels;
    const chairmanModel = request.chairmanModel ?? inConfig.chairmanModel ?? fallback.chairmanModel;
    return { config: { councilModels, chairmanModel }, panel: councilModels, seat: chairmanModel };
  },
});

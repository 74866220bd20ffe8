import type { VoteConfig } from '@conclave/contracts';
import { SeatOption, modeOptions, type ModeConfigDefinition } from '../config-kit';

export const VOTE_MIN_MODELS = 3;
export const VOTE_MAX_MODELS = 6;
/** 02-vote.md: fewer than 2 answers end the vote. */
export const VOTE_MIN_ANSWERS = 2;

/** The chairman is optional: it breaks ties, and may be a voter. */
const COMMON = modeOptions({
  panel: { role: 'voter', field: 'modeConfig.models', min: VOTE_MIN_MODELS, max: VOTE_MAX_MODELS },
  seat: { role: 'chairman', field: 'modeConfig.chairmanModel', min: 0, max: 1 },
  gate: { members: 'voting models', minimum: VOTE_MIN_ANSWERS },
  fallbacks: { option: 'chairmanFallbacks', seat: 'tiebreaking chairman' },
  timeout: { min: 10_000, max: 600_000, unit: 'ms' },
  timeoutType: 'number',
});

/** `modeConfig` of a vote request (02-vote.md §D). */
export class VoteConfigDto extends COMMON.Dto {
  @COMMON.Panel({
    tooFew: `Vote mode requires at least ${VOTE_MIN_MODELS} models`,
    tooMany: `Maximum ${VOTE_MAX_MODELS} models allowed`,
  })
  models?: string[];

  @SeatOption()
  chairmanModel?: string;
}

/** The chairman may be a voter; without one named, the first model breaks ties. */
const chairmanOf = (models: readonly string[]): string => models[0];

export const voteConfig: ModeConfigDefinition<VoteConfig> = COMMON.define({
  schema: VoteConfigDto,
  /** What a vote request that names none of these gets. */
  defaults: (defaults) => ({
    models: defaults.vote.models,
    chairmanModel: chairmanOf(defaults.vote.models),
    timeoutMs: defaults.timeoutMs,
  }),
  resolve: (given, fallback) => {
    const models = given.models ?? fallback.models;
    const chairmanModel = given.chairmanModel ?? chairmanOf(models);
    return { config: { models, chairmanModel }, panel: models, seat: chairmanModel };
  },
});

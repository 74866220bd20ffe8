import type { DebateConfig } from '@conclave/contracts';
import { modeOptions, type ModeConfigDefinition } from '../config-kit';

export const DEBATE_MIN_MODELS = 3;
export const DEBATE_MAX_MODELS = 6;
/** 04-debate.md §F: fewer than 2 first answers end the debate. */
export const DEBATE_MIN_ANSWERS = 2;

/** No seat: every debater votes. The timeout is rounded to whole ms, hence shown as an integer. */
const COMMON = modeOptions({
  panel: { role: 'debater', field: 'modeConfig.models', min: DEBATE_MIN_MODELS, max: DEBATE_MAX_MODELS },
  gate: { members: 'debating models', minimum: DEBATE_MIN_ANSWERS },
  timeout: { min: 10_000, max: 600_000, unit: 'ms' },
  timeoutType: 'number',
  shownTimeout: { type: 'integer' },
});

/** `modeConfig` of a debate request (04-debate.md §D). The same model may appear twice. */
export class DebateConfigDto extends COMMON.Dto {
  @COMMON.Panel({
    tooFew: `Debate mode requires at least ${DEBATE_MIN_MODELS} models`,
    tooMany: `Maximum ${DEBATE_MAX_MODELS} models allowed`,
  })
  models?: string[];
}

export const debateConfig: ModeConfigDefinition<DebateConfig> = COMMON.define({
  schema: DebateConfigDto,
  /** What a debate request that names none of these gets. */
  defaults: (defaults) => ({ models: defaults.debate.models, timeoutMs: defaults.timeoutMs }),
  resolve: (given, fallback) => {
    const models = given.models ?? fallback.models;
    return { config: { models }, panel: models, seat: null };
  },
});

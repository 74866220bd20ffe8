import type { DebateConfig } from '@conclave/contracts';
import {
  ModeOptionsDto,
  PanelOption,
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

export const DEBATE_MIN_MODELS = 3;
export const DEBATE_MAX_MODELS = 6;
const TIMEOUT_MS: Range = { min: 10_000, max: 600_000, unit: 'ms' };

/** `modeConfig` of a debate request (04-debate.md §D). The same model may appear twice. */
export class DebateConfigDto extends ModeOptionsDto({
  timeout: TIMEOUT_MS,
  timeoutType: 'number',
  maxMembers: DEBATE_MAX_MODELS,
}) {
  @PanelOption({
    min: DEBATE_MIN_MODELS,
    max: DEBATE_MAX_MODELS,
    tooFew: `Debate mode requires at least ${DEBATE_MIN_MODELS} models`,
    tooMany: `Maximum ${DEBATE_MAX_MODELS} models allowed`,
  })
  models?: string[];
}

/** 04-debate.md §F: fewer than 2 first answers end the debate. */
export const DEBATE_MIN_ANSWERS = 2;

/** What a debate request that names none of these gets. */
export const debateDefaults = (defaults: ModeDefaults): DebateConfig => ({
  models: defaults.debate.models,
  timeoutMs: defaults.timeoutMs,
});

export function resolveDebateConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<DebateConfig> {
  const given = (request.modeConfig ?? {}) as DebateConfigDto;
  const fallback = debateDefaults(defaults);
  const models = given.models ?? fallback.models;
  const fields: FieldErrors = {};
  const resilience = resolveResilience(
    given,
    { size: models.length, members: 'debating models', minimum: DEBATE_MIN_ANSWERS },
    null,
    fields,
  );
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return {
    ok: true,
    config: {
      models,
      timeoutMs: Math.round(given.timeoutMs ?? fallback.timeoutMs),
      ...resilience,
    },
  };
}

export const debateConfig: ModeConfigDefinition<DebateConfig> = {
  schema: DebateConfigDto,
  roster: [{ role: 'debater', field: 'modeConfig.models', min: DEBATE_MIN_MODELS, max: DEBATE_MAX_MODELS }],
  options: [
    timeoutOptionRule(TIMEOUT_MS, 'integer'),
    ...gateOptionRules('debating models', DEBATE_MIN_ANSWERS),
  ],
  defaults: debateDefaults,
  resolve: resolveDebateConfig,
};

import type { ModeEvent, StageReduction, SuccessfulCall } from './types';

/** A stage outcome that ends the deliberation with a message for the user and stores nothing. */
export const failure = (message: string): StageReduction => ({
  rows: [],
  events: [],
  transition: { kind: 'fail', message },
});

/** A mode event; `key` (default: the type) makes delivering it twice a no-op. */
export const modeEvent = (type: string, payload: Record<string, unknown> = {}, key = type): ModeEvent => ({
  key,
  type,
  payload,
});

/** The usage columns of a stage row made from one model call. */
export const usageOf = (call: SuccessfulCall) => ({
  responseTimeMs: call.responseTimeMs,
  promptTokens: call.promptTokens,
  completionTokens: call.completionTokens,
  costUsd: call.costUsd,
});

/** The usage columns of a row no model call produced (label maps, summaries, statistics). */
export const NO_USAGE = { responseTimeMs: null, promptTokens: null, completionTokens: null, costUsd: null };

/** Why a model stopped writing; `length` means its answer was cut at the token limit. */
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls' | 'other';

/**
 * One model call of a deliberation as its result lists it: who was asked at which stage, how it
 * went and what it cost. No content: the mode's result shows that, under the mode's anonymity.
 */
export interface CallSummary {
  stage: string;
  model: string;
  ok: boolean;
  /** Why it failed (`cancelled` when the deliberation was stopped while it ran). */
  error: string | null;
  finishReason: FinishReason | null;
  /** The answer was cut at the provider's length limit. */
  truncated: boolean;
  responseTimeMs: number;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
}

/** A stored model call with its key and answer: what the gateway reads to build a view's `partial`. */
export interface StoredStageCall {
  stage: string;
  /** The call's key within its stage (`model`, `p0`, `model#2`, `chairman`, …). */
  key: string;
  model: string;
  ok: boolean;
  /** Null for a failed call (or when not read). */
  content: string | null;
  error: string | null;
  finishReason: FinishReason | null;
}

/** A call a stage started (its stored `model_progress started` event): the stage, its key and how it is shown. */
export interface StartedStageCall {
  stage: string;
  key: string;
  /** As `model_progress` shows it: the model id, or Delphi's 1-based panelist number. */
  participant: string | number;
}

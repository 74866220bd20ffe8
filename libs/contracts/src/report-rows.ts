import type { MessageStatus, ModeName } from './modes';

/**
 * What a report reads from the database, in the narrowest form: the repository selects these
 * columns (and only the JSON paths the statistics need), page by page, and the builders never see
 * more than one page of them at a time.
 */

/** One batch item (its assistant message) and what its user message carries for reports. */
export interface ReportItem {
  index: number;
  messageId: string;
  mode: ModeName;
  status: MessageStatus;
  /** The item's `reference` as submitted: a verdict, a number, a model id or an option; null when none. */
  reference: string | number | null;
  /** The item's `key` (matching across batches); null when none. */
  key: string | null;
  /** A graded item's expected answer as stored (issue 37); null or absent when ungraded. */
  expected?: string | number | null;
  /**
   * Graded items only (the panel-gain section's per-correct-answer figures): what the item's
   * latest attempt cost over its calls (USD), its tokens (prompt + completion), its duration from
   * dispatch to completion (ms); null or absent when unknown or ungraded.
   */
  costUsd?: number | null;
  tokens?: number | null;
  durationMs?: number | null;
}

/** A `deliberation_stages` row without its text: `data` is `parsed_data` minus long text fields. */
export interface ReportStageRow {
  stageType: string;
  model: string | null;
  participant: number | null;
  data: Record<string, unknown> | null;
}

/** Per model totals over the model calls of the report's finished items (aggregated in SQL). */
export interface ReportCallAggregate {
  model: string;
  calls: number;
  failed: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Successful calls, the n of the latency quantiles. */
  okCalls: number;
  latencyP50: number | null;
  latencyP95: number | null;
  /**
   * The model's calls per item in compact form: how many items had `calls` calls of which
   * `failed` failed (one row per distinct pair). The failed-call share's interval resamples items
   * with these; without them it is Wilson's over calls.
   */
  perItem?: ReportCallsPerItem[];
}

/** `items` items on which a model made `calls` calls, `failed` of them failed. */
export interface ReportCallsPerItem {
  calls: number;
  failed: number;
  items: number;
}

/** Calls per mode, stage and model (e.g. council's chairman at `stage3`). */
export interface ReportStageCalls {
  mode: ModeName;
  stage: string;
  model: string;
  calls: number;
  failed: number;
}

/** Batch-wide usage of the finished items (aggregated in SQL). */
export interface ReportUsageAggregate {
  items: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  costMean: number | null;
  costP50: number | null;
  costP95: number | null;
  durationItems: number;
  durationP50: number | null;
  durationP95: number | null;
  okCalls: number;
  latencyP50: number | null;
  latencyP95: number | null;
}

/** Failed items grouped by their error text (aggregated in SQL, most frequent first). */
export interface ReportFailureRow {
  error: string;
  count: number;
  examples: { index: number; messageId: string; key: string | null }[];
}

/** Everything aggregated in SQL rather than streamed. */
export interface ReportAggregates {
  calls: readonly ReportCallAggregate[];
  stageCalls: readonly ReportStageCalls[];
  usage: ReportUsageAggregate;
  failures: readonly ReportFailureRow[];
}

/**
 * One attempt of a batch item (its assistant message) as the long-format export lists it: every
 * attempt, the latest and the superseded ones, since every attempt's calls count in usage.
 */
export interface ReportAttemptRow {
  index: number;
  messageId: string;
  attempt: number;
  /** The item's latest attempt (the one reports and the per-item export show). */
  latest: boolean;
  mode: ModeName;
  status: MessageStatus;
  error: string | null;
  dispatchedAt: string | null;
  completedAt: string | null;
  /** completed_at − dispatched_at in ms as reports measure item duration; null unless complete or failed. */
  durationMs: number | null;
}

/** One `model_calls` row without its text: what usage, latency and failure figures are computed from. */
export interface ReportCallRow {
  messageId: string;
  stage: string;
  callKey: string;
  model: string;
  ok: boolean;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
  latencyMs: number;
  /** When the call's row was written (the call's end). */
  finishedAt: string;
}

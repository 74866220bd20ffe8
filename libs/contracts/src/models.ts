/**
 * GET /api/models: the model ids a roster can name, from every configured source, with what is
 * known of each, and how each source fared. Ids are exactly what a request puts in a roster.
 */
export const MODEL_SOURCES = ['simulated', 'openrouter', 'openai-compatible'] as const;
export type ModelSource = (typeof MODEL_SOURCES)[number];

/** US dollars per million tokens (OpenRouter reports dollars per token; converted). */
export interface ModelPricing {
  promptPerMillionUsd: number;
  completionPerMillionUsd: number;
}

export interface ModelEntry {
  /** The id a roster names: `sim/athena`, `openai/gpt-4o` (OpenRouter), `local/llama3.2` (OpenAI-compatible). */
  id: string;
  provider: ModelSource;
  /** A display name (the id when the source gives none). */
  name: string;
  /** Context window in tokens, when the source says. */
  contextLength?: number;
  pricing?: ModelPricing;
  /** Plain text (no markup is ever interpreted), truncated. */
  description?: string;
}

/** How one source of the list fared; `error` is safe to show (no host, URL or key). */
export interface ModelSourceStatus {
  provider: ModelSource;
  /** Whether its setting is present (the simulated panel always is). */
  configured: boolean;
  /** When its list was last fetched successfully (ISO 8601); null before that, and for `simulated`. */
  fetchedAt: string | null;
  /** Entries of this source in `models`. */
  count: number;
  /** Why the last fetch failed (the last good list, if any, is still served); null when it did not. */
  error: string | null;
  /** Anything else worth knowing, e.g. why a configured source is not used. */
  note?: string;
}

/** One behaviour directive of simulated ids (`sim/<name>:<directive>`), for the picker's help. */
export interface SimDirectiveHelp {
  /** e.g. `:delay<ms>[@kind]`. */
  syntax: string;
  effect: string;
  /** A whole model id using it, e.g. `sim/hermes:delay800@answer`. */
  example: string;
}

export interface ModelsResponse {
  models: ModelEntry[];
  sources: ModelSourceStatus[];
  /** What may follow `sim/<name>`; directives combine (`sim/a:delay500:rank3`). */
  directives: SimDirectiveHelp[];
  /** The prompt kinds `@kind` may name (e.g. `sim/chair:fail@synthesis`). */
  promptKinds: string[];
}

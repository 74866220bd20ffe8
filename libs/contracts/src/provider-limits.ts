/** A fleet-wide limit on calls to one provider or model (PROVIDER_LIMITS). */
export interface RateLimit {
  /** Calls in flight at once, across every worker. */
  maxConcurrent?: number;
  /** Calls started in any sliding 60-second window, across every worker. */
  rpm?: number;
}

/** Limits per provider key and per model id (the id as requested, e.g. `openai/gpt-4o`). */
export interface ProviderLimits {
  providers: Readonly<Record<string, RateLimit>>;
  models: Readonly<Record<string, RateLimit>>;
}

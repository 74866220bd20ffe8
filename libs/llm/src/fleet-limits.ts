import { Completion, CompletionRequest, ModelCallError, ModelProvider } from './provider';
import { modelCallErrorFromAbort } from './retry';
import type { ProviderLimits } from '@conclave/contracts';

export type { ProviderLimits, RateLimit } from '@conclave/contracts';

/**
 * The names limits use for providers (`PROVIDER_LIMITS` keys without a slash): stable
 * identifiers, unlike an OpenAI-compatible provider's `name` (its host and port).
 */
export const PROVIDER_KEYS = {
  openrouter: 'openrouter',
  openaiCompatible: 'openai-compatible',
  simulated: 'simulated',
} as const;
export type ProviderKey = (typeof PROVIDER_KEYS)[keyof typeof PROVIDER_KEYS];

export function hasProviderLimits(limits: ProviderLimits): boolean {
  return Object.keys(limits.providers).length > 0 || Object.keys(limits.models).length > 0;
}

/**
 * Whether any limit can apply to calls through `provider`: its own entry, or a model entry routed
 * to it (`sim/…` ids go to the simulator, every other id to the real provider; `everyModel`
 * when the provider answers every id, as the simulator does when no real provider is configured).
 */
export function limitsCover(
  limits: ProviderLimits,
  provider: string,
  options: { everyModel?: boolean } = {},
): boolean {
  if (Object.hasOwn(limits.providers, provider)) return true;
  const models = Object.keys(limits.models);
  if (options.everyModel) return models.length > 0;
  const simulated = provider === PROVIDER_KEYS.simulated;
  return models.some((model) => model.startsWith('sim/') === simulated);
}

/** What one call is counted against: its provider and, when a model limit exists, its model. */
export interface LimitScope {
  provider: string;
  model?: string;
}

export interface FleetLease {
  readonly id: string;
}

/**
 * Admission to a provider, shared by every worker of a deployment. Implementations hold the
 * fleet-wide state (Redis in production); callers never see how.
 */
export interface FleetLimiter {
  /**
   * Resolves once a call may start under every limit that applies to `scope` and no cool-down
   * is running for its provider; waits otherwise. Rejects with the abort's ModelCallError
   * as soon as `signal` fires.
   */
  acquire(scope: LimitScope, signal: AbortSignal): Promise<FleetLease>;
  /** Frees the lease's concurrency slot (its per-minute count stays). Never throws. */
  release(lease: FleetLease): Promise<void>;
  /** No call to `provider` starts anywhere for the next `ms` (an existing longer one stays). */
  penalize(provider: string, ms: number): Promise<void>;
}

export interface LimitedProviderOptions {
  /** The provider key limits and cool-downs are kept under (see PROVIDER_KEYS). */
  provider: string;
  /** Cool-down after a 429 that names no Retry-After. */
  defaultPenaltyMs?: number;
  /** Longest cool-down one 429 may impose on the fleet (a far-off Retry-After is clipped). */
  maxPenaltyMs?: number;
}

export const DEFAULT_PENALTY_MS = 1000;
export const MAX_PENALTY_MS = 60_000;

/**
 * Puts every attempt of a call through the fleet's limits: acquires before calling the inner
 * provider and releases after; a 429 starts a fleet-wide cool-down for the provider.
 * Sits under RetryingProvider, so each retry waits for slots and cool-downs again and no slot
 * is held during a backoff.
 */
export class LimitedProvider implements ModelProvider {
  readonly name: string;
  readonly key?: string;
  private readonly provider: string;
  private readonly defaultPenaltyMs: number;
  private readonly maxPenaltyMs: number;

  constructor(
    private readonly inner: ModelProvider,
    private readonly limiter: FleetLimiter,
    options: LimitedProviderOptions,
  ) {
    this.name = inner.name;
    if (inner.key !== undefined) this.key = inner.key;
    this.provider = options.provider;
    this.defaultPenaltyMs = options.defaultPenaltyMs ?? DEFAULT_PENALTY_MS;
    this.maxPenaltyMs = options.maxPenaltyMs ?? MAX_PENALTY_MS;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const { signal } = request;
    if (signal.aborted) throw modelCallErrorFromAbort(signal);
    const lease = await this.limiter.acquire({ provider: this.provider, model: request.model }, signal);
    try {
      return await this.inner.complete(request);
    } catch (err) {
      if (err instanceof ModelCallError && err.status === 429) {
        // Before the slot is freed, so whoever takes it already sees the cool-down.
        const ms = Math.min(Math.max(err.retryAfterMs ?? this.defaultPenaltyMs, 0), this.maxPenaltyMs);
        if (ms > 0) await untilSettledOrAborted(this.limiter.penalize(this.provider, ms), signal);
      }
      throw err;
    } finally {
      await untilSettledOrAborted(this.limiter.release(lease), signal);
    }
  }
}

/**
 * Waits for a bookkeeping promise but never fails the call for it, and stops waiting once the
 * call is aborted (the promise still runs; a lease left behind expires on its own).
 */
function untilSettledOrAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  const settled = promise.catch(() => undefined);
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void settled.then(done);
  });
}

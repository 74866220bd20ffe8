import type { ConclaveConfig } from '@conclave/config';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '@conclave/deliberation';
import {
  LimitedProvider,
  PROVIDER_KEYS,
  RetryingProvider,
  RoutingProvider,
  SimulatedProvider,
  hasProviderLimits,
  limitsCover,
  providerFromEnv,
  type ModelProvider,
} from '@conclave/llm';
import { RedisFleetLimiter, type RedisClient } from '@conclave/redis';

export interface ProviderOverrides {
  /** Replaces the real provider (tests point it at a local chat-completions server). */
  realProvider?: ModelProvider | null;
}

/**
 * The provider chain: Routing → Retrying → [Limited →] HTTP or simulator. With PROVIDER_LIMITS
 * and a Redis connection, every attempt to a limited provider goes through the fleet-wide
 * limiter (`redis` is the worker's own connection); without them no call touches Redis.
 * An injected `realProvider` is used as given (it arrives with its own retry policy).
 */
export function buildProvider(
  config: ConclaveConfig,
  overrides: ProviderOverrides = {},
  redis?: RedisClient,
): RoutingProvider {
  const limits = config.providerLimits;
  const limiter =
    redis && hasProviderLimits(limits) ? new RedisFleetLimiter(redis, config.redisPrefix, limits) : null;
  const limited = (provider: ModelProvider, key: string, covered: boolean): ModelProvider =>
    limiter && covered ? new LimitedProvider(provider, limiter, { provider: key }) : provider;
  const real =
    overrides.realProvider !== undefined
      ? overrides.realProvider
      : providerFromEnv(process.env, { wrap: (p, key) => limited(p, key, limitsCover(limits, key)) });
  const simulatedKey = PROVIDER_KEYS.simulated;
  const simulated = new RetryingProvider(
    limited(
      new SimulatedProvider({
        responders: SIMULATED_RESPONDERS,
        fallback: SIMULATED_FALLBACK,
        latencyMs: config.simulator.latencyMs,
        latencyJitter: config.simulator.latencyJitter,
        streamPieces: config.simulator.streamPieces,
        seed: config.simulator.seed,
      }),
      simulatedKey,
      // Without a real provider the simulator answers every model id, so every model limit applies.
      limitsCover(limits, simulatedKey, { everyModel: !real }),
    ),
    { policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 1000 } },
  );
  return new RoutingProvider(simulated, real);
}

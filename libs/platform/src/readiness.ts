import { redisAnswers, withTimeout, type RedisClient } from '@conclave/redis';
import type { DataSource } from 'typeorm';

export interface Readiness {
  ready: boolean;
  checks: { postgres: 'up' | 'down'; redis: 'up' | 'down' };
}

/** Retry-After of a readiness probe's 503 (gateway and worker): a store outage has no known end. */
export const NOT_READY_RETRY_AFTER_SECONDS = 5;

/**
 * Ready means both stores answer within `timeoutMs` (a Redis Cluster: with every slot served); the
 * answer names the one that did not.
 */
export async function checkReadiness(
  dataSource: DataSource,
  redis: RedisClient,
  timeoutMs = 2000,
): Promise<Readiness> {
  const [postgres, redisUp] = await Promise.all([
    withTimeout(dataSource.query('SELECT 1'), timeoutMs, 'PostgreSQL').then(
      () => 'up' as const,
      () => 'down' as const,
    ),
    withTimeout(redisAnswers(redis), timeoutMs).then(
      () => 'up' as const,
      () => 'down' as const,
    ),
  ]);
  return { ready: postgres === 'up' && redisUp === 'up', checks: { postgres, redis: redisUp } };
}

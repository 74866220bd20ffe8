import type { Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { connectionErrorLogger } from '@conclave/observability';
import { createRedis, type RedisClient } from '@conclave/redis';

/**
 * A Redis connection of its own for SUBSCRIBE (the hubs of stored events and of batch progress),
 * its connection errors logged repeat-limited as `redis subscriber: …`.
 */
export function openSubscriber(config: ConclaveConfig, logger: Logger): RedisClient {
  return createRedis(
    config,
    'subscriber',
    connectionErrorLogger((message) => logger.warn(`redis subscriber: ${message}`)),
  );
}

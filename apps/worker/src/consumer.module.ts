import { Module, type DynamicModule } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { connectionErrorLogger, type Logger } from '@conclave/observability';
import { LOGGER } from '@conclave/platform';
import { createRedis, type RedisClient } from '@conclave/redis';
import { CONSUMER_ERRORS, REDIS_CONSUMER } from './tokens';

/**
 * The connection BullMQ's worker consumes on (REDIS_CONSUMER), disconnected at shutdown, and its
 * error listener (CONSUMER_ERRORS): the connection, the worker and the queue on it report the
 * same errors, so one repeat-limited line each.
 */
@Module({})
export class ConsumerModule {
  static forRoot(config: ConclaveConfig): DynamicModule {
    return {
      module: ConsumerModule,
      global: true,
      providers: [
        {
          provide: CONSUMER_ERRORS,
          inject: [LOGGER],
          useFactory: (logger: Logger) =>
            connectionErrorLogger((message) => logger.error(`worker error: ${message}`)),
        },
        {
          provide: REDIS_CONSUMER,
          inject: [CONSUMER_ERRORS],
          useFactory: (onError: (error: unknown) => void) => createRedis(config, 'worker', onError),
        },
        {
          provide: 'CONSUMER_SHUTDOWN',
          inject: [REDIS_CONSUMER],
          useFactory: (redis: RedisClient) => ({
            onApplicationShutdown() {
              redis.disconnect();
            },
          }),
        },
      ],
      exports: [REDIS_CONSUMER, CONSUMER_ERRORS],
    };
  }
}

import { Logger, Module, type DynamicModule } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { connectionErrorLogger } from '@conclave/observability';
import { createRedis, StageQueue } from '@conclave/redis';
import type { Redis } from 'ioredis';
import { REDIS_PRODUCER, STAGE_QUEUE } from './tokens';

/**
 * The producer side of Redis: a fail-fast connection (REDIS_PRODUCER) and the stage queue on it
 * (STAGE_QUEUE), closed when the application shuts down.
 */
@Module({})
export class QueueModule {
  static forRoot(config: ConclaveConfig): DynamicModule {
    // The producer connection and the queue on it report the same errors: one repeat-limited log.
    const redisLogger = new Logger('redis');
    const producerErrors = connectionErrorLogger((message) => redisLogger.warn(`redis producer: ${message}`));
    return {
      module: QueueModule,
      global: true,
      providers: [
        {
          provide: REDIS_PRODUCER,
          useFactory: () => createRedis(config.redisUrl, 'producer', producerErrors),
        },
        {
          provide: STAGE_QUEUE,
          inject: [REDIS_PRODUCER],
          useFactory: (redis: Redis) =>
            new StageQueue(redis, config.redisPrefix, {
              attempts: config.worker.attempts,
              onError: producerErrors,
            }),
        },
        {
          provide: 'QUEUE_SHUTDOWN',
          inject: [STAGE_QUEUE, REDIS_PRODUCER],
          useFactory: (queue: StageQueue, redis: Redis) => ({
            async onApplicationShutdown() {
              await queue.close().catch(() => undefined);
              redis.disconnect();
            },
          }),
        },
      ],
      exports: [REDIS_PRODUCER, STAGE_QUEUE],
    };
  }
}

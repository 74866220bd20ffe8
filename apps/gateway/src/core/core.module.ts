import { BullModule, getQueueToken } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import type { ConclaveConfig } from '@conclave/config';
import { STAGE_QUEUE_DEFINITION } from '@conclave/contracts';
import {
  ConfigModule,
  ObservabilityModule,
  PersistenceModule,
  QueueModule,
  REDIS_PRODUCER,
} from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import { PublicUrl } from '../common/public-url';
import { QueryParamsInterceptor } from '../common/query-params';
import { RateLimiter } from '../common/rate-limiter';

/**
 * The gateway's infrastructure, for every feature module: configuration, metrics and logger,
 * PostgreSQL (DataSource, store, repositories), Redis (the producer connection, the event
 * publisher, the batch dispatcher, WorkStops) and BullMQ through @nestjs/bullmq as in the worker
 * (`BullModule.forRootAsync` on the producer connection with the queue key prefix; the stage
 * queue registered and handed to QueueModule's STAGE_QUEUE). Beside them the gateway's own shared
 * pieces: the rate limiter (one per process: it holds the in-memory fallback), the public URL and
 * the query-parameter check on every route. Global, as the platform modules are.
 *
 * Shutdown: modules that are not global close first (@nestjs/bullmq's queues among them), then the
 * global ones, where QueueModule disconnects the producer connection.
 */
@Module({})
export class CoreModule {
  static register(config: ConclaveConfig): DynamicModule {
    return {
      module: CoreModule,
      global: true,
      imports: [
        ConfigModule.forRoot(config),
        ObservabilityModule.forRoot(config, 'gateway'),
        PersistenceModule.forRoot(config),
        QueueModule.forRoot(config, {
          stageQueue: {
            imports: [BullModule.registerQueue({ name: STAGE_QUEUE_DEFINITION.name })],
            inject: getQueueToken(STAGE_QUEUE_DEFINITION.name),
          },
        }),
        // Every queue the gateway registers is on the producer connection, under the queue prefix.
        BullModule.forRootAsync({
          inject: [REDIS_PRODUCER],
          useFactory: (connection: RedisClient) => ({ connection, prefix: config.queuePrefix }),
        }),
      ],
      providers: [
        RateLimiter,
        PublicUrl,
        // Every route's query parameters checked like its body: unknown ones and lists refused.
        { provide: APP_INTERCEPTOR, useClass: QueryParamsInterceptor },
      ],
      exports: [RateLimiter, PublicUrl],
    };
  }
}

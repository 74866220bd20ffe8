import { Logger, Module, type DynamicModule, type InjectionToken, type ModuleMetadata } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { ConclaveConfig } from '@conclave/config';
import { connectionErrorLogger } from '@conclave/observability';
import {
  BatchDispatcher,
  BatchesRepository,
  OpenWorkRepository,
  TypeOrmDeliberationStore,
  WorkStops,
} from '@conclave/persistence';
import type { EventPublisher } from '@conclave/deliberation';
import {
  createRedis,
  publishControl,
  RedisBatchQueue,
  RedisEventPublisher,
  StageQueue,
  type RedisClient,
} from '@conclave/redis';
import { EVENT_PUBLISHER, REDIS_PRODUCER, STAGE_QUEUE } from './tokens';

export interface QueueModuleOptions {
  /**
   * How the producer connection treats a Redis outage: `producer` (the gateway) fails fast, so the
   * API answers 503 instead of hanging; `worker` waits for Redis, so a stage's next enqueue is not
   * lost while it is away.
   */
  connection?: 'producer' | 'worker';
  /**
   * Where the connection's and the queue's errors go (repeat-limited); by default Nest's logger,
   * context `redis`.
   */
  warn?: (message: string) => void;
  /**
   * The BullMQ Queue the stage queue adds to, when the app registers it with @nestjs/bullmq (the
   * gateway: `BullModule.registerQueue` on the producer connection): `imports` provide it under
   * `inject` (`getQueueToken(name)`), and @nestjs/bullmq closes it. Without it, QueueModule opens a
   * queue of its own on the producer connection (the worker's producer).
   */
  stageQueue?: { imports: NonNullable<ModuleMetadata['imports']>; inject: InjectionToken };
}

/**
 * The producer side of Redis: a connection (REDIS_PRODUCER) and the stage queue on it
 * (STAGE_QUEUE), closed when the application shuts down; the event publisher on it (EVENT_PUBLISHER).
 */
@Module({})
export class QueueModule {
  static forRoot(config: ConclaveConfig, options: QueueModuleOptions = {}): DynamicModule {
    const redisLogger = new Logger('redis');
    const warn = options.warn ?? ((message: string) => redisLogger.warn(message));
    // The producer connection and the queue on it report the same errors: one repeat-limited log.
    const producerErrors = connectionErrorLogger((message) => warn(`redis producer: ${message}`));
    return {
      module: QueueModule,
      global: true,
      imports: options.stageQueue?.imports ?? [],
      providers: [
        {
          provide: REDIS_PRODUCER,
          useFactory: () => createRedis(config, options.connection ?? 'producer', producerErrors),
        },
        {
          provide: STAGE_QUEUE,
          inject: [options.stageQueue?.inject ?? REDIS_PRODUCER],
          useFactory: (source: Queue | RedisClient) => {
            const stageOptions = { attempts: config.worker.attempts, onError: producerErrors };
            return options.stageQueue
              ? new StageQueue(source as Queue, stageOptions)
              : new StageQueue(source as RedisClient, config.queuePrefix, stageOptions);
          },
        },
        {
          provide: 'QUEUE_SHUTDOWN',
          inject: [STAGE_QUEUE, REDIS_PRODUCER],
          useFactory: (queue: StageQueue, redis: RedisClient) => ({
            async onApplicationShutdown() {
              await queue.close().catch(() => undefined);
              redis.disconnect();
            },
          }),
        },
        {
          provide: EVENT_PUBLISHER,
          inject: [REDIS_PRODUCER],
          useFactory: (redis: RedisClient): EventPublisher =>
            new RedisEventPublisher(redis, config.redisPrefix),
        },
        {
          // Starts a batch's next items on the stage queue (BatchesRepository: PersistenceModule).
          provide: BatchDispatcher,
          inject: [BatchesRepository, STAGE_QUEUE, REDIS_PRODUCER, EVENT_PUBLISHER],
          useFactory: (
            batches: BatchesRepository,
            queue: StageQueue,
            redis: RedisClient,
            events: EventPublisher,
          ) => new BatchDispatcher(batches, new RedisBatchQueue(queue, redis, config.redisPrefix), events),
        },
        {
          // Stops deliberations and batches: a user's, a batch's, an admin's or a revocation's cancel.
          provide: WorkStops,
          inject: [
            TypeOrmDeliberationStore,
            BatchesRepository,
            OpenWorkRepository,
            REDIS_PRODUCER,
            STAGE_QUEUE,
            BatchDispatcher,
            EVENT_PUBLISHER,
          ],
          useFactory: (
            store: TypeOrmDeliberationStore,
            batches: BatchesRepository,
            openWork: OpenWorkRepository,
            redis: RedisClient,
            queue: StageQueue,
            dispatcher: BatchDispatcher,
            publisher: EventPublisher,
          ) => {
            const log = new Logger('cancel');
            return new WorkStops({
              store,
              batches,
              openWork,
              redis: {
                abortCalls: (messageId) =>
                  publishControl(redis, config.redisPrefix, { type: 'cancel', messageId }),
                queue,
                dispatcher,
                publisher,
              },
              warn: (message) => log.warn(message),
            });
          },
        },
      ],
      exports: [REDIS_PRODUCER, STAGE_QUEUE, EVENT_PUBLISHER, BatchDispatcher, WorkStops],
    };
  }
}

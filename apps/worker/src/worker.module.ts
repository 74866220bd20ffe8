import { BullModule } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import { listenDatabaseUrl, type ConclaveConfig } from '@conclave/config';
import { STAGE_QUEUE_DEFINITION, type StageQueueJobs } from '@conclave/contracts';
import {
  HeldOutcomes,
  LiveCalls,
  Resumer,
  StageRunner,
  StopHearing,
  modeDefinition,
  type EventPublisher,
} from '@conclave/deliberation';
import { ObservedProvider, type Logger, type Metrics } from '@conclave/observability';
import {
  BatchDispatcher,
  TypeOrmDeliberationStore,
  UnstoredCalls,
  callDigest,
  isStoreUnavailable,
} from '@conclave/persistence';
import { DataSource } from 'typeorm';
import {
  ConfigModule,
  EVENT_PUBLISHER,
  LOGGER,
  METRICS,
  ObservabilityModule,
  PersistenceModule,
  QueueModule,
  REDIS_PRODUCER,
  STAGE_QUEUE,
} from '@conclave/platform';
import { QueueWatch, RedisLiveChannel, type RedisClient, type StageQueue } from '@conclave/redis';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ActiveStages } from './active-stages';
import { ConsumerModule } from './consumer.module';
import { GenerateTitleHandler } from './jobs/generate-title.handler';
import type { AnyJobHandler } from './jobs/job-handlers';
import { RunStageHandler } from './jobs/run-stage.handler';
import { StageProcessor, stageProcessorClass } from './jobs/stage.processor';
import { WorkerLifecycle } from './lifecycle';
import { LiveControl } from './live-control';
import { DataLifecycleJob } from './maintenance/data-lifecycle.job';
import { buildProvider, type ProviderOverrides } from './provider';
import { Reconciler } from './reconciler';
import { Recovery } from './recovery';
import { REDIS_CONSUMER, STAGE_JOB_HANDLERS } from './tokens';

/** Earlier turns loaded for a follow-up; each mode truncates further (council: 10). */
const HISTORY_LOAD_LIMIT = 50;

export interface WorkerModuleOptions extends ProviderOverrides {
  /** The JSON logger every line of the worker goes through. */
  logger: Logger;
}

/**
 * The worker application: the gateway's configuration, observability, persistence and queue
 * modules, BullMQ (@nestjs/bullmq) consuming the stage queue on a connection of its own, and the
 * deliberation engine (libs/deliberation, framework-free) built from them.
 */
@Module({})
export class WorkerModule {
  static forRoot(config: ConclaveConfig, options: WorkerModuleOptions): DynamicModule {
    const { logger } = options;
    return {
      module: WorkerModule,
      imports: [
        ConfigModule.forRoot(config),
        ObservabilityModule.forRoot(config, 'worker', { logger }),
        PersistenceModule.forRoot(config, { poolSize: config.worker.dbPoolSize }),
        // The worker's producer waits for Redis rather than failing fast: a stage's next enqueue
        // must not be lost to a Redis blip.
        QueueModule.forRoot(config, { connection: 'worker', warn: (message) => logger.warn(message) }),
        ConsumerModule.forRoot(config),
        BullModule.forRootAsync({
          inject: [REDIS_CONSUMER],
          useFactory: (connection: RedisClient) => ({ connection, prefix: config.queuePrefix }),
        }),
        // Also what brings @nestjs/bullmq's explorer, which starts the worker of each @Processor.
        BullModule.registerQueue({ name: STAGE_QUEUE_DEFINITION.name }),
      ],
      providers: [
        {
          provide: LiveCalls,
          inject: [REDIS_PRODUCER, LOGGER],
          useFactory: (redis: RedisClient, log: Logger) =>
            new LiveCalls(new RedisLiveChannel(redis, config.redisPrefix), (message) => log.warn(message)),
        },
        // Deaf until LiveControl listens (and whenever its deciding channel is lost): PostgreSQL's
        // stop notices when there is a connection to LISTEN on, else the Redis control channel.
        {
          provide: StopHearing,
          useFactory: () =>
            new StopHearing({
              hearing: false,
              decidedBy: listenDatabaseUrl(config) ? 'database' : 'control',
            }),
        },
        {
          // The usage of calls whose answers could not be stored, written once PostgreSQL takes it.
          provide: UnstoredCalls,
          inject: [DataSource, LOGGER],
          useFactory: (dataSource: DataSource, log: Logger) =>
            new UnstoredCalls(dataSource, { log: (message) => log.warn(message) }),
        },
        {
          provide: StageRunner,
          inject: [
            TypeOrmDeliberationStore,
            STAGE_QUEUE,
            REDIS_PRODUCER,
            BatchDispatcher,
            METRICS,
            LOGGER,
            LiveCalls,
            UnstoredCalls,
            StopHearing,
            EVENT_PUBLISHER,
          ],
          useFactory: (
            store: TypeOrmDeliberationStore,
            scheduler: StageQueue,
            redis: RedisClient,
            batches: BatchDispatcher,
            metrics: Metrics,
            log: Logger,
            live: LiveCalls,
            unstoredCalls: UnstoredCalls,
            hearing: StopHearing,
            events: EventPublisher,
          ) => {
            const provider = buildProvider(config, options, redis);
            return new StageRunner(
              modeDefinition,
              store,
              new ObservedProvider(provider, metrics, (model) => provider.providerOf(model)),
              events,
              scheduler,
              {
                historyTurns: HISTORY_LOAD_LIMIT,
                deliberationCapMs: config.deliberationCapMs,
                log: (message) => log.info(message),
                // The provider's full words (hosts included, credentials removed) for operators; users get the failure kind.
                logCallError: ({ detail, retry, ...fields }) =>
                  log.warn(
                    { ...fields, ...(retry ? { attempt: retry.attempt, retryInMs: retry.delayMs } : {}) },
                    `model call ${retry ? 'attempt failed, retrying' : 'failed'}: ${detail}`,
                  ),
                onFinished: (_messageId, batchId) =>
                  batchId ? batches.itemFinished(batchId) : Promise.resolve(),
                live,
                // PostgreSQL away: answers wait in memory (bounded) and their writes are tried again.
                storeRetry: {
                  isUnavailable: isStoreUnavailable,
                  maxWaitMs: config.worker.storeHoldMs,
                  held: new HeldOutcomes(config.worker.storeHoldBytes),
                },
                // Calls made whose answers could not be stored still count in usage and budgets.
                onUnstored: (messageId, calls) => {
                  unstoredCalls.add(
                    calls.map(({ stage, outcome }) => ({
                      messageId,
                      stage,
                      key: outcome.key,
                      model: outcome.model,
                      ok: outcome.ok,
                      responseTimeMs: outcome.responseTimeMs,
                      promptTokens: outcome.ok ? outcome.promptTokens : null,
                      completionTokens: outcome.ok ? outcome.completionTokens : null,
                      costUsd: outcome.ok ? outcome.costUsd : null,
                      simulated: outcome.ok ? outcome.simulated : false,
                      digest: callDigest(outcome.ok ? outcome.content : outcome.error),
                    })),
                  );
                },
                hearing,
              },
            );
          },
        },
        ActiveStages,
        {
          provide: Resumer,
          inject: [TypeOrmDeliberationStore, STAGE_QUEUE, EVENT_PUBLISHER, LOGGER],
          useFactory: (
            store: TypeOrmDeliberationStore,
            scheduler: StageQueue,
            events: EventPublisher,
            log: Logger,
          ) => new Resumer(store, scheduler, events, (message) => log.warn(message)),
        },
        {
          provide: QueueWatch,
          inject: [REDIS_PRODUCER],
          useFactory: (redis: RedisClient) =>
            new QueueWatch(
              redis,
              config.queuePrefix,
              `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
            ),
        },
        Recovery,
        RunStageHandler,
        GenerateTitleHandler,
        {
          provide: STAGE_JOB_HANDLERS,
          inject: [RunStageHandler, GenerateTitleHandler],
          useFactory: (...handlers: AnyJobHandler<StageQueueJobs>[]) => handlers,
        },
        { provide: StageProcessor, useClass: stageProcessorClass(config) },
        Reconciler,
        LiveControl,
        WorkerLifecycle,
        // The fleet-wide data-lifecycle job: event partitions ahead, and retention (RETENTION_DAYS).
        DataLifecycleJob,
      ],
    };
  }
}

import type { ConclaveConfig } from '@conclave/config';
import { JOB_NAMES, STAGE_QUEUE, type StageJobData, type TitleJobData } from '@conclave/contracts';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS, StageRunner } from '@conclave/deliberation';
import {
  RetryingProvider,
  RoutingProvider,
  SimulatedProvider,
  providerFromEnv,
  type ModelProvider,
} from '@conclave/llm';
import {
  BatchDispatcher,
  RedisEventPublisher,
  StageQueue,
  TypeOrmDeliberationStore,
  createDataSource,
  createRedis,
} from '@conclave/persistence';
import { Worker, type Job } from 'bullmq';

/** Earlier turns loaded for a follow-up; each mode truncates further (council: 10). */
const HISTORY_LOAD_LIMIT = 50;

export interface RunningWorker {
  close(): Promise<void>;
}

export interface WorkerOverrides {
  /** Replaces the real provider (tests point it at a local chat-completions server). */
  realProvider?: ModelProvider | null;
  log?: (message: string) => void;
}

export function buildProvider(config: ConclaveConfig, overrides: WorkerOverrides = {}): ModelProvider {
  const simulated = new RetryingProvider(
    new SimulatedProvider({
      responders: SIMULATED_RESPONDERS,
      fallback: SIMULATED_FALLBACK,
      latencyMs: config.simulator.latencyMs,
      seed: config.simulator.seed,
    }),
    { policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 1000 } },
  );
  const real = overrides.realProvider !== undefined ? overrides.realProvider : providerFromEnv(process.env);
  return new RoutingProvider(simulated, real);
}

/** The worker process: BullMQ consumers around the deliberation engine, and nothing else. */
export async function startWorker(
  config: ConclaveConfig,
  overrides: WorkerOverrides = {},
): Promise<RunningWorker> {
  const log = overrides.log ?? ((message: string) => console.log(`[worker] ${message}`));
  const dataSource = createDataSource(config.databaseUrl, Math.max(5, config.worker.concurrency));
  await dataSource.initialize();
  const producer = createRedis(config.redisUrl, 'worker');
  const consumer = createRedis(config.redisUrl, 'worker');
  const scheduler = new StageQueue(producer, config.redisPrefix, { attempts: config.worker.attempts });
  const batches = new BatchDispatcher(dataSource, scheduler, producer, config.redisPrefix);
  const runner = new StageRunner(
    new TypeOrmDeliberationStore(dataSource),
    buildProvider(config, overrides),
    new RedisEventPublisher(producer, config.redisPrefix),
    scheduler,
    {
      historyTurns: HISTORY_LOAD_LIMIT,
      deliberationCapMs: config.deliberationCapMs,
      log,
      onFinished: (messageId) => batches.itemFinished(messageId),
    },
  );

  const worker = new Worker(
    STAGE_QUEUE,
    async (job: Job) => {
      if (job.name === JOB_NAMES.stage) {
        const data = job.data as StageJobData;
        await runner.runStage(data.messageId, data.stage);
      } else if (job.name === JOB_NAMES.title) {
        await runner.generateTitle((job.data as TitleJobData).messageId);
      } else {
        throw new Error(`no handler for job ${job.name}`);
      }
    },
    {
      connection: consumer,
      prefix: config.redisPrefix,
      concurrency: config.worker.concurrency,
      lockDuration: config.worker.lockDurationMs,
      stalledInterval: config.worker.stalledIntervalMs,
      maxStalledCount: config.worker.maxStalledCount,
    },
  );

  worker.on('failed', (job, error) => {
    if (!job) return;
    log(`job ${job.name} ${job.id} failed (attempt ${job.attemptsMade}): ${error.message}`);
    const spent = job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(error.message);
    if (job.name === JOB_NAMES.stage && spent) {
      const data = job.data as StageJobData;
      void runner
        .failPermanently(
          data.messageId,
          `The deliberation stopped because of an internal error during ${data.stage}. Please try again.`,
        )
        .catch((e: unknown) => log(`could not mark ${data.messageId} failed: ${String(e)}`));
    }
  });
  worker.on('error', (error) => log(`worker error: ${error.message}`));
  await worker.waitUntilReady();
  const reconciler = setInterval(() => {
    runner
      .reconcile(config.worker.reconcileIdleMs)
      .then((n) => n > 0 && log(`rescheduled or closed ${n} deliberation(s) that had stopped moving`))
      .then(() => batches.reconcile())
      .catch((error: unknown) => log(`reconcile failed: ${String(error)}`));
  }, config.worker.reconcileIntervalMs);
  reconciler.unref();
  log(`consuming ${config.redisPrefix}:${STAGE_QUEUE} with concurrency ${config.worker.concurrency}`);

  return {
    async close() {
      clearInterval(reconciler);
      await worker.close();
      await scheduler.close();
      producer.disconnect();
      consumer.disconnect();
      await dataSource.destroy();
    },
  };
}

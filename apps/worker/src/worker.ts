import { modelsNamedInConfig, type ConclaveConfig } from '@conclave/config';
import { JOB_NAMES, STAGE_QUEUE, type StageJobData, type TitleJobData } from '@conclave/contracts';
import {
  SIMULATED_FALLBACK,
  SIMULATED_RESPONDERS,
  StageRunner,
  modeDefinition,
} from '@conclave/deliberation';
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
import {
  BatchDispatcher,
  TypeOrmDeliberationStore,
  createDataSource,
  isStoreUnavailable,
} from '@conclave/persistence';
import { RedisEventPublisher, RedisFleetLimiter, StageQueue, createRedis } from '@conclave/redis';
import {
  Metrics,
  ObservedProvider,
  connectionErrorLogger,
  createLogger,
  withLogContext,
  type Logger,
} from '@conclave/observability';
import { DelayedError, Worker, type Job } from 'bullmq';
import { hostname } from 'node:os';
import { startWorkerHttp } from './http';

/** How long a stage waits before trying again while PostgreSQL or Redis cannot be reached. */
const STORE_WAIT_MS = 2000;

/** Earlier turns loaded for a follow-up; each mode truncates further (council: 10). */
const HISTORY_LOAD_LIMIT = 50;

export interface RunningWorker {
  /** Port of the worker's own HTTP server (health and metrics). */
  readonly httpPort: number;
  close(): Promise<void>;
}

export interface WorkerOverrides {
  /** Replaces the real provider (tests point it at a local chat-completions server). */
  realProvider?: ModelProvider | null;
  /** Replaces the JSON logger (tests pass a silent one). */
  logger?: Logger;
}

/**
 * The provider chain: Routing → Retrying → [Limited →] HTTP or simulator. With PROVIDER_LIMITS
 * and a Redis connection, every attempt to a limited provider goes through the fleet-wide
 * limiter (`redis` is the worker's own connection); without them no call touches Redis.
 * An injected `realProvider` is used as given (it arrives with its own retry policy).
 */
export function buildProvider(
  config: ConclaveConfig,
  overrides: WorkerOverrides = {},
  redis?: ReturnType<typeof createRedis>,
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

/** The worker process: BullMQ consumers around the deliberation engine, and nothing else. */
export async function startWorker(
  config: ConclaveConfig,
  overrides: WorkerOverrides = {},
): Promise<RunningWorker> {
  const logger = overrides.logger ?? createLogger(config.logLevel, 'worker');
  const log = (message: string) => logger.info(message);
  // Only models the configuration names get a `model` label of their own: request input stays out.
  const metrics = new Metrics('worker', { models: modelsNamedInConfig(config) });
  const dataSource = createDataSource(config.databaseUrl, config.worker.dbPoolSize);
  await dataSource.initialize();
  // A connection and the BullMQ queue or worker on it report the same errors: one repeat-limited log each.
  const producerErrors = connectionErrorLogger((message) => logger.warn(`redis producer: ${message}`));
  const consumerErrors = connectionErrorLogger((message) => logger.error(`worker error: ${message}`));
  const producer = createRedis(config.redisUrl, 'worker', producerErrors);
  const consumer = createRedis(config.redisUrl, 'worker', consumerErrors);
  const scheduler = new StageQueue(producer, config.redisPrefix, {
    attempts: config.worker.attempts,
    onError: producerErrors,
  });
  const batches = new BatchDispatcher(dataSource, scheduler, producer, config.redisPrefix);
  const provider = buildProvider(config, overrides, producer);
  const runner = new StageRunner(
    modeDefinition,
    new TypeOrmDeliberationStore(dataSource),
    new ObservedProvider(provider, metrics, (model) => provider.providerOf(model)),
    new RedisEventPublisher(producer, config.redisPrefix),
    scheduler,
    {
      historyTurns: HISTORY_LOAD_LIMIT,
      deliberationCapMs: config.deliberationCapMs,
      log,
      // The provider's full words (hosts included, credentials removed) for operators; users get the failure kind.
      logCallError: ({ detail, retry, ...fields }) =>
        logger.warn(
          { ...fields, ...(retry ? { attempt: retry.attempt, retryInMs: retry.delayMs } : {}) },
          `model call ${retry ? 'attempt failed, retrying' : 'failed'}: ${detail}`,
        ),
      onFinished: (_messageId, batchId) => (batchId ? batches.itemFinished(batchId) : Promise.resolve()),
    },
  );

  const worker = new Worker(
    STAGE_QUEUE,
    (job: Job, token?: string) =>
      withLogContext(
        { jobId: job.id ?? '', job: job.name, messageId: (job.data as StageJobData).messageId },
        async () => {
          try {
            await runJob(job);
          } catch (error) {
            // PostgreSQL (or Redis) away: wait for it without spending the job's attempts, which are
            // for errors of the stage itself. Model answers already stored are reused on the rerun.
            if (!isStoreUnavailable(error) || !token) throw error;
            logger.warn(`storage unavailable, stage waits ${STORE_WAIT_MS} ms: ${(error as Error).message}`);
            await job.moveToDelayed(Date.now() + STORE_WAIT_MS, token);
            throw new DelayedError();
          }
        },
      ),
    {
      connection: consumer,
      prefix: config.redisPrefix,
      // Shown as each job's processedBy (Bull Board, tests): which process holds it.
      name: `${hostname()}:${process.pid}`,
      concurrency: config.worker.concurrency,
      lockDuration: config.worker.lockDurationMs,
      stalledInterval: config.worker.stalledIntervalMs,
      maxStalledCount: config.worker.maxStalledCount,
    },
  );

  async function runJob(job: Job): Promise<void> {
    if (job.name === JOB_NAMES.stage) {
      const data = job.data as StageJobData;
      const started = performance.now();
      let outcome = 'error';
      let mode = 'unknown';
      try {
        const ran = await runner.runStage(data.messageId, data.stage);
        outcome = ran ? 'ok' : 'skipped';
        mode = ran?.mode ?? mode;
      } finally {
        const seconds = (performance.now() - started) / 1000;
        if (outcome !== 'skipped')
          metrics.stageDuration.observe(
            { mode: metrics.modeLabel(mode), stage: metrics.stageLabel(data.stage), outcome },
            seconds,
          );
        logger.info({ stage: data.stage, mode, outcome, seconds }, 'stage job done');
      }
    } else if (job.name === JOB_NAMES.title) {
      await runner.generateTitle((job.data as TitleJobData).messageId);
    } else {
      throw new Error(`no handler for job ${job.name}`);
    }
  }

  worker.on('failed', (job, error) => {
    if (!job) return;
    logger.warn(
      {
        jobId: job.id,
        job: job.name,
        messageId: (job.data as StageJobData).messageId,
        attempt: job.attemptsMade,
      },
      `job failed: ${error.message}`,
    );
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
  worker.on('error', consumerErrors);
  await worker.waitUntilReady();
  const http = await startWorkerHttp(
    config.worker.httpPort,
    dataSource,
    producer,
    metrics,
    config.metricsToken,
  );
  if (config.nodeEnv === 'production' && !config.metricsToken) {
    logger.warn(`METRICS_TOKEN is not set: /metrics on port ${http.port} answers whoever can reach it`);
  }
  // PostgreSQL is the source of truth: work it holds that Redis lost (a restart without
  // persistence, a flushed instance) is found and enqueued again, at start and then periodically.
  const reconcile = () =>
    runner
      .reconcile(config.worker.reconcileIdleMs)
      .then((n) => n > 0 && logger.warn(`rescheduled or closed ${n} deliberation(s) that had stopped moving`))
      .then(() => batches.reconcile())
      .catch((error: unknown) => logger.warn(`reconcile failed: ${String(error)}`));
  void reconcile();
  const reconciler = setInterval(reconcile, config.worker.reconcileIntervalMs);
  reconciler.unref();
  logger.info(
    { httpPort: http.port },
    `consuming ${config.redisPrefix}:${STAGE_QUEUE} with concurrency ${config.worker.concurrency}`,
  );

  return {
    httpPort: http.port,
    async close() {
      clearInterval(reconciler);
      // Active stages may finish; past the deadline their jobs are left to expire their locks,
      // and another worker's stalled-job check takes them over (model outcomes already stored are reused).
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), config.worker.shutdownTimeoutMs);
      });
      const drained = await Promise.race([worker.close().then(() => 'drained' as const), deadline]);
      clearTimeout(timer);
      if (drained === 'late') {
        logger.warn(
          `active jobs still running after ${config.worker.shutdownTimeoutMs} ms: handing them back`,
        );
        await worker.close(true);
      }
      await http.close();
      await scheduler.close();
      producer.disconnect();
      consumer.disconnect();
      await dataSource.destroy();
    },
  };
}

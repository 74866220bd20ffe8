import { LIFECYCLE_QUEUE } from '@conclave/contracts';
import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import type { Logger, Metrics } from '@conclave/observability';
import {
  LifecycleRepository,
  REMOVED_KINDS,
  runLifecycle,
  type LifecycleReport,
} from '@conclave/persistence';
import { CONFIG, LOGGER, METRICS, REDIS_PRODUCER } from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import { Queue, Worker, type Job } from 'bullmq';
import { hostname } from 'node:os';
import { CONSUMER_ERRORS, REDIS_CONSUMER } from '../tokens';

/**
 * Queue (LIFECYCLE_QUEUE, in the contracts: Bull Board shows it too), scheduler and job names are
 * stored state in Redis: never rename them casually. One queue of its own, so the stage queue's
 * workers and metrics never see this job.
 */
export { LIFECYCLE_QUEUE };
/** The job scheduler's fixed id: however many workers register it, there is one. */
export const LIFECYCLE_SCHEDULER_ID = 'data-lifecycle';
export const LIFECYCLE_JOB_NAME = 'run';
/** How often each worker checks that the scheduler is still there (a Redis that lost its data). */
const REREGISTER_MAX_MS = 300_000;

/** What a run hands back as its job's return value (kept in Redis for the last runs). */
export interface LifecycleRunSummary {
  cutoff: string | null;
  removed: LifecycleReport['removed'];
  partitionsCreated: string[];
  partitionsDropped: string[];
  chunks: number;
  longestChunkMs: number;
  durationMs: number;
  complete: boolean;
  worker: string;
}

/**
 * The data lifecycle of the whole fleet (issue 23): one BullMQ job scheduler with a fixed id
 * (`data-lifecycle`, every LIFECYCLE_INTERVAL_MS, first run at once), registered by every worker
 * and run by one of them at a time (the queue's global concurrency is 1). Each run keeps the event
 * partitions ahead and, with RETENTION_DAYS set, deletes the finished data past it in chunks
 * (libs/persistence runLifecycle), then reports what it removed in metrics and one log line.
 */
@Injectable()
export class DataLifecycleJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private queue: Queue | null = null;
  private worker: Worker | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) private readonly producer: RedisClient,
    @Inject(REDIS_CONSUMER) private readonly consumer: RedisClient,
    @Inject(CONSUMER_ERRORS) private readonly consumerErrors: (error: unknown) => void,
    private readonly lifecycle: LifecycleRepository,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const prefix = this.config.queuePrefix;
    for (const kind of [...REMOVED_KINDS, 'event_partitions']) this.metrics.retentionDeleted.inc({ kind }, 0);
    this.queue = new Queue(LIFECYCLE_QUEUE, { connection: this.producer, prefix });
    this.queue.on('error', this.consumerErrors);
    this.worker = new Worker(LIFECYCLE_QUEUE, (job: Job) => this.process(job), {
      connection: this.consumer,
      prefix,
      name: `${hostname()}:${process.pid}`,
      concurrency: 1,
    });
    this.worker.on('error', this.consumerErrors);
    this.worker.on('failed', (_job, error) => {
      this.metrics.lifecycleRuns.inc({ outcome: 'error' });
      this.logger.warn(`data lifecycle run failed (the next run tries again): ${error.message}`);
    });
    // Redis refusing now must not stop the worker: the check below registers it later.
    await this.register().catch((error: unknown) =>
      this.logger.warn(`could not register the data-lifecycle schedule yet: ${String(error)}`),
    );
    this.timer = setInterval(
      () =>
        void this.register().catch((error: unknown) =>
          this.logger.warn(`could not check the data-lifecycle schedule: ${String(error)}`),
        ),
      Math.min(this.config.lifecycle.intervalMs, REREGISTER_MAX_MS),
    );
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    // A run under way stops before its next chunk; close() waits for it.
    await this.worker?.close().catch(() => undefined);
    await this.queue?.close().catch(() => undefined);
  }

  /**
   * Makes sure the one scheduler exists with this configuration's interval. Every worker calls
   * this at start and then now and again; as long as nothing changed it leaves the schedule alone.
   */
  private async register(): Promise<void> {
    const queue = this.queue;
    if (!queue) return;
    await queue.setGlobalConcurrency(1);
    const every = this.config.lifecycle.intervalMs;
    const existing = await queue.getJobScheduler(LIFECYCLE_SCHEDULER_ID);
    if (existing && Number(existing.every) === every) return;
    await queue.upsertJobScheduler(
      LIFECYCLE_SCHEDULER_ID,
      { every },
      {
        name: LIFECYCLE_JOB_NAME,
        data: {},
        opts: { attempts: 1, removeOnComplete: { count: 20 }, removeOnFail: { count: 20 } },
      },
    );
  }

  private async process(job: Job): Promise<LifecycleRunSummary> {
    const { retentionDays, chunkSize } = this.config.lifecycle;
    const started = performance.now();
    const report = await runLifecycle(this.lifecycle, {
      now: new Date(),
      retentionDays,
      chunkSize,
      stopping: () => this.stopping,
    });
    const durationMs = Math.round(performance.now() - started);
    const summary: LifecycleRunSummary = {
      cutoff: report.cutoff?.toISOString() ?? null,
      removed: report.removed,
      partitionsCreated: report.partitionsCreated,
      partitionsDropped: report.partitionsDropped,
      chunks: report.chunks,
      longestChunkMs: Math.round(report.longestChunkMs),
      durationMs,
      complete: report.complete,
      worker: job.processedBy ?? `${hostname()}:${process.pid}`,
    };
    this.record(summary);
    return summary;
  }

  private record(summary: LifecycleRunSummary): void {
    const { metrics } = this;
    for (const kind of REMOVED_KINDS) metrics.retentionDeleted.inc({ kind }, summary.removed[kind]);
    metrics.retentionDeleted.inc({ kind: 'event_partitions' }, summary.partitionsDropped.length);
    metrics.eventPartitionsCreated.inc(summary.partitionsCreated.length);
    metrics.lifecycleRuns.inc({ outcome: summary.complete ? 'ok' : 'incomplete' });
    metrics.lifecycleRunDuration.observe(summary.durationMs / 1000);
    if (summary.complete) metrics.lifecycleLastSuccess.set(Date.now() / 1000);
    const { removed } = summary;
    const anything =
      summary.cutoff !== null || summary.partitionsCreated.length > 0 || summary.partitionsDropped.length > 0;
    const line =
      (summary.cutoff === null
        ? 'data lifecycle: retention off (RETENTION_DAYS unset)'
        : `data lifecycle: deleted what was last active before ${summary.cutoff}: ${removed.conversations} conversations ` +
          `(${removed.messages} messages, ${removed.stage_rows} stage rows, ${removed.model_calls} model calls, ` +
          `${removed.events} events), ${removed.batches} batches, ${summary.partitionsDropped.length} event partitions ` +
          `dropped, in ${summary.chunks} transactions (longest ${summary.longestChunkMs} ms)`) +
      `; ${summary.partitionsCreated.length} event partitions created; ${summary.durationMs} ms` +
      (summary.complete ? '' : '; stopped early for shutdown, the next run goes on');
    const fields = {
      removed,
      partitionsCreated: summary.partitionsCreated,
      partitionsDropped: summary.partitionsDropped,
      chunks: summary.chunks,
      longestChunkMs: summary.longestChunkMs,
      durationMs: summary.durationMs,
    };
    if (anything) this.logger.info(fields, line);
    else this.logger.debug(fields, line);
  }
}

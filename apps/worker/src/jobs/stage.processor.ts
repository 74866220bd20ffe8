import { InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Injectable, type Type } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  JOB_NAMES,
  STAGE_QUEUE_DEFINITION,
  type StageJobData,
  type StageQueueJobs,
} from '@conclave/contracts';
import { withLogContext, type Logger } from '@conclave/observability';
import { isStoreUnavailable } from '@conclave/persistence';
import { LOGGER } from '@conclave/platform';
import { DelayedError, Queue, type Job, type WorkerOptions } from 'bullmq';
import { hostname } from 'node:os';
import { CONSUMER_ERRORS, STAGE_JOB_HANDLERS } from '../tokens';
import { JobHandlerMap, type AnyJobHandler } from './job-handlers';

/** How long a stage waits before trying again while PostgreSQL or Redis cannot be reached. */
export const STORE_WAIT_MS = 2000;

/** A job as the stage queue's worker receives it: name and payload are checked before use. */
type ReceivedStageJob = Job<unknown, unknown, string>;

/**
 * The consumer of the stage queue: each job goes to its name's handler (one per job name of
 * STAGE_QUEUE_DEFINITION, checked when the processor is built), under the job's log context.
 * The worker's options come from the configuration: see stageProcessorClass.
 */
@Injectable()
export class StageProcessor extends WorkerHost {
  private readonly jobs: JobHandlerMap<StageQueueJobs>;

  constructor(
    @Inject(STAGE_JOB_HANDLERS) handlers: AnyJobHandler<StageQueueJobs>[],
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(CONSUMER_ERRORS) private readonly consumerErrors: (error: unknown) => void,
    // Registered for this processor on the consumer connection: its errors are that connection's.
    @InjectQueue(STAGE_QUEUE_DEFINITION.name) queue: Queue,
  ) {
    super();
    this.jobs = new JobHandlerMap(STAGE_QUEUE_DEFINITION, handlers);
    queue.on('error', consumerErrors);
  }

  override process(job: ReceivedStageJob, token?: string): Promise<void> {
    const payload = this.jobs.payloadOf(job);
    return withLogContext(
      { jobId: job.id ?? '', job: job.name, ...(payload ? { messageId: payload.messageId } : {}) },
      async () => {
        try {
          await this.jobs.run(job);
        } catch (error) {
          // PostgreSQL (or Redis) away: wait for it without spending the job's attempts, which are
          // for errors of the stage itself. Model answers already stored are reused on the rerun.
          if (!isStoreUnavailable(error) || !token) throw error;
          const reason = error instanceof Error ? error.message : String(error);
          this.logger.warn(`storage unavailable, stage waits ${STORE_WAIT_MS} ms: ${reason}`);
          await job.moveToDelayed(Date.now() + STORE_WAIT_MS, token);
          throw new DelayedError();
        }
      },
    );
  }

  /**
   * Every failed attempt is logged; a job whose attempts or stalls are spent then goes to its
   * handler's failedForGood (a stage marks its deliberation failed).
   */
  @OnWorkerEvent('failed')
  onFailed(job: ReceivedStageJob | undefined, error: Error): void {
    if (!job) return;
    const payload = this.jobs.payloadOf(job);
    this.logger.warn(
      { jobId: job.id, job: job.name, messageId: payload?.messageId, attempt: job.attemptsMade },
      `job failed: ${error.message}`,
    );
    // A new conversation's first job carries its question (`start`). A failed job is kept for days
    // (and shown on the dashboard) while its retries load the message anyway: it keeps ids only.
    if (job.name === JOB_NAMES.stage && payload && 'start' in payload) {
      const { messageId, stage } = payload as StageJobData;
      job
        .updateData({ messageId, stage })
        .catch((e: unknown) => this.logger.info(`could not drop the start of job ${job.id}: ${String(e)}`));
    }
    const spent = job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(error.message);
    if (spent) {
      void this.jobs
        .failedForGood(job)
        .catch((e: unknown) =>
          this.logger.info(`could not handle the failure of job ${job.id}: ${String(e)}`),
        );
    }
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.consumerErrors(error);
  }

  /**
   * Stops taking jobs and lets the active ones finish for up to `timeoutMs`; past that they are
   * handed back: their locks are no longer renewed, so once a lock lapses another worker's
   * stalled-job check runs the job again (model outcomes already stored are reused).
   */
  async drain(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    // pause() waits like close() but, unlike a close under way, leaves a forced close possible.
    const drained = await Promise.race([
      this.worker.pause().then(
        () => true,
        (error: unknown) => {
          this.logger.warn(`could not wait for the active jobs: ${String(error)}`);
          return false;
        },
      ),
      deadline.then(() => {
        this.logger.warn(`active jobs still running after ${timeoutMs} ms: handing them back`);
        return false;
      }),
    ]);
    clearTimeout(timer);
    await this.worker.close(!drained);
  }
}

/**
 * The stage worker's BullMQ options: the configured concurrency and stalled-job settings (the
 * connection and the key prefix come from BullModule.forRootAsync).
 */
export function stageWorkerOptions(config: ConclaveConfig): Omit<WorkerOptions, 'connection'> {
  return {
    // Shown as each job's processedBy (Bull Board, tests): which process holds it.
    name: `${hostname()}:${process.pid}`,
    concurrency: config.worker.concurrency,
    lockDuration: config.worker.lockDurationMs,
    stalledInterval: config.worker.stalledIntervalMs,
    maxStalledCount: config.worker.maxStalledCount,
  };
}

/**
 * StageProcessor as a @Processor of the stage queue with this configuration's worker options:
 * @nestjs/bullmq reads them from the class's decorator, so each configuration gets a subclass.
 */
export function stageProcessorClass(config: ConclaveConfig): Type<StageProcessor> {
  @Processor(STAGE_QUEUE_DEFINITION.name, stageWorkerOptions(config))
  class ConfiguredStageProcessor extends StageProcessor {}
  return ConfiguredStageProcessor;
}

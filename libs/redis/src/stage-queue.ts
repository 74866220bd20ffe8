import {
  JOB_NAMES,
  STAGE_QUEUE_DEFINITION,
  stageJobId,
  type JobName,
  type StageQueueJobs,
} from '@conclave/contracts';
import type { EnqueueOptions, StageJobState, StageScheduler } from '@conclave/deliberation';
import { Queue, type JobsOptions } from 'bullmq';
import type { ConnectionErrorListener, RedisClient } from './connection';

/** Lower than any interactive job (which has none). */
export const BACKGROUND_PRIORITY = 10;

export interface StageQueueOptions {
  attempts: number;
  /** Hears the queue's errors (its connection's, forwarded); without it BullMQ prints them. */
  onError?: ConnectionErrorListener;
}

type StageJobName = JobName<StageQueueJobs>;

/** One job to add: a name of the stage queue (STAGE_QUEUE_DEFINITION) with that name's payload. */
type StageQueueJob = {
  [N in StageJobName]: { name: N; data: StageQueueJobs[N]; opts: JobsOptions };
}[StageJobName];

/** Whether a job in this BullMQ state is still to run (waiting, prioritized, delayed) or running. */
const isPending = (state: string): boolean => !['completed', 'failed', 'unknown'].includes(state);

/** The producer of the stage queue: adds only the job names and payloads its definition has. */
export class StageQueue implements StageScheduler {
  readonly queue: Queue;

  private readonly options: StageQueueOptions;

  /**
   * On `queue`, a BullMQ Queue of the stage queue's name built elsewhere (the gateway's, registered
   * with @nestjs/bullmq, which closes it); or on a queue of its own over `connection`, where
   * `prefix` is BullMQ's (ConclaveConfig.queuePrefix): on a Redis Cluster it must be a hash tag,
   * so that every key of the queue is in one slot.
   */
  constructor(queue: Queue, options: StageQueueOptions);
  constructor(connection: RedisClient, prefix: string, options: StageQueueOptions);
  constructor(
    source: Queue | RedisClient,
    prefixOrOptions: string | StageQueueOptions,
    ownOptions?: StageQueueOptions,
  ) {
    if (source instanceof Queue) {
      if (source.name !== STAGE_QUEUE_DEFINITION.name)
        throw new Error(`StageQueue needs the queue "${STAGE_QUEUE_DEFINITION.name}", not "${source.name}"`);
      this.queue = source;
      this.options = prefixOrOptions as StageQueueOptions;
    } else {
      this.queue = new Queue(STAGE_QUEUE_DEFINITION.name, {
        connection: source,
        prefix: prefixOrOptions as string,
      });
      this.options = ownOptions as StageQueueOptions;
    }
    if (this.options.onError) this.queue.on('error', this.options.onError);
  }

  private jobOptions(jobId: string, options: EnqueueOptions = {}): JobsOptions {
    return {
      jobId,
      // BullMQ runs jobs without a priority before any prioritized one: batch items wait.
      ...(options.background ? { priority: BACKGROUND_PRIORITY } : {}),
      attempts: this.options.attempts,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 5000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    };
  }

  private async add<N extends StageJobName>(
    name: N,
    data: StageQueueJobs[N],
    opts: JobsOptions,
  ): Promise<void> {
    await this.queue.add(name, data, opts);
  }

  private async addBulk(jobs: StageQueueJob[]): Promise<void> {
    await this.queue.addBulk(jobs);
  }

  async enqueueStage(messageId: string, stage: string, options: EnqueueOptions = {}): Promise<void> {
    await this.add(
      JOB_NAMES.stage,
      { messageId, stage, ...(options.start ? { start: options.start } : {}) },
      this.jobOptions(stageJobId(messageId, stage), options),
    );
  }

  /** Many first stages at once, as a batch starts its items: one round trip. */
  async enqueueMany(
    items: { messageId: string; stage: string }[],
    options: EnqueueOptions = {},
  ): Promise<void> {
    if (items.length === 0) return;
    await this.addBulk(
      items.map((item): StageQueueJob => ({
        name: JOB_NAMES.stage,
        data: { messageId: item.messageId, stage: item.stage },
        opts: this.jobOptions(stageJobId(item.messageId, item.stage), options),
      })),
    );
  }

  async stageJobState(messageId: string, stage: string): Promise<StageJobState> {
    const job = await this.queue.getJob(stageJobId(messageId, stage));
    if (!job) return 'missing';
    const state = await job.getState();
    if (state === 'completed') return 'completed';
    if (state === 'failed') return 'failed';
    // A job in no list (see rescheduleStage): nothing will run it.
    if (state === 'unknown') return 'missing';
    return 'pending';
  }

  /**
   * Queues the stage again unless its job waits or runs. A job kept after it finished is removed
   * first, and so is one BullMQ knows in no state at all (`unknown`: its hash outlived the list
   * that held it, when Redis lost only some of the queue's keys: an eviction, keys deleted one by
   * one while an enqueue ran): BullMQ's add ignores a job id whose hash exists, so without the
   * removal the stage would stay unqueued however often the reconciler "rescheduled" it. A job
   * still locked (a worker runs it, whatever its state) is left to that worker.
   */
  async rescheduleStage(messageId: string, stage: string, options: EnqueueOptions = {}): Promise<void> {
    const jobId = stageJobId(messageId, stage);
    const job = await this.queue.getJob(jobId);
    if (job) {
      if (isPending(await job.getState())) return;
      if ((await this.queue.remove(jobId)) !== 1) return;
    }
    await this.enqueueStage(messageId, stage, options);
  }

  /**
   * Removes a stage's job in whatever state it waits or was kept in (a running one is left to end:
   * BullMQ refuses to remove a locked job). True when it was removed.
   */
  async removeStage(messageId: string, stage: string): Promise<boolean> {
    return (await this.queue.remove(stageJobId(messageId, stage))) === 1;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

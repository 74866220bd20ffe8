import { Inject, Injectable } from '@nestjs/common';
import { JOB_NAMES, type StageJobData, type StageQueueJobs } from '@conclave/contracts';
import { Resumer, StageRunner } from '@conclave/deliberation';
import type { Logger, Metrics } from '@conclave/observability';
import { recordLostCalls } from '@conclave/persistence';
import { LOGGER, METRICS } from '@conclave/platform';
import { QueueWatch } from '@conclave/redis';
import { DataSource } from 'typeorm';
import { ActiveStages } from '../active-stages';
import type { JobHandler, JobRun } from './job-handlers';

/**
 * `run-stage`: one stage of one deliberation, timed (conclave_stage_duration_seconds) and logged,
 * and listed in this worker's lease while it runs (ActiveStages). A job taken over after its
 * worker stopped (a stall) first tells the deliberation's subscribers that the stage resumes, and
 * counts the calls that died in flight with that worker (recordLostCalls): the provider billed
 * them, and the stage makes them again.
 */
@Injectable()
export class RunStageHandler implements JobHandler<StageQueueJobs, typeof JOB_NAMES.stage> {
  readonly jobName = JOB_NAMES.stage;

  constructor(
    private readonly runner: StageRunner,
    private readonly resumer: Resumer,
    private readonly active: ActiveStages,
    private readonly watch: QueueWatch,
    private readonly dataSource: DataSource,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async run(data: StageJobData, job: JobRun): Promise<void> {
    const started = performance.now();
    let outcome = 'error';
    let mode = 'unknown';
    this.active.add(data.messageId, data.stage);
    try {
      if (job.stalls > 0) {
        // Once per stall (the key carries the count), and only while the stage is still to run.
        await this.resumer.announce(data.messageId, data.stage, 'worker_lost', String(job.stalls));
        await this.countLostCalls(data.messageId);
      }
      const ran = await this.runner.runStage(data.messageId, data.stage, {
        firstStart: job.firstStart,
        ...(data.start ? { start: data.start } : {}),
      });
      outcome = ran ? 'ok' : 'skipped';
      mode = ran?.mode ?? mode;
    } finally {
      this.active.delete(data.messageId, data.stage);
      const seconds = (performance.now() - started) / 1000;
      if (outcome !== 'skipped')
        this.metrics.stageDuration.observe(
          { mode: this.metrics.modeLabel(mode), stage: this.metrics.stageLabel(data.stage), outcome },
          seconds,
        );
      this.logger.info({ stage: data.stage, mode, outcome, seconds }, 'stage job done');
    }
  }

  /**
   * Usage-only rows for the deliberation's calls that other workers' last heartbeats list as in
   * flight: before the stage runs again, so a call stored before its worker died is told by its
   * row. Best effort: the stage runs on without it.
   */
  private async countLostCalls(messageId: string): Promise<void> {
    try {
      const calls = await this.watch.callsOf(messageId);
      const n = await recordLostCalls(
        this.dataSource,
        calls.map((c) => ({ ...c, listedAt: c.leaseAt })),
      );
      if (n > 0) this.logger.warn(`counted ${n} model call(s) that died in flight with their worker`);
    } catch (error) {
      this.logger.warn(`could not count the calls lost with a worker: ${String(error)}`);
    }
  }

  /** A stage that cannot be run marks its deliberation failed: the user is told, nothing hangs. */
  async failedForGood(data: StageJobData): Promise<void> {
    await this.runner
      .failPermanently(
        data.messageId,
        `The deliberation stopped because of an internal error during ${data.stage}. Please try again.`,
      )
      .catch((e: unknown) => this.logger.info(`could not mark ${data.messageId} failed: ${String(e)}`));
  }
}

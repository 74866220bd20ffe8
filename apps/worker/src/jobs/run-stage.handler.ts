import { Inject, Injectable } from '@nestjs/common';
import { JOB_NAMES, type StageJobData, type StageQueueJobs } from '@conclave/contracts';
import { Resumer, StageRunner } from '@conclave/deliberation';
import type { Logger, Metrics } from '@conclave/observability';
import { LOGGER, METRICS } from '@conclave/platform';
import { ActiveStages } from '../active-stages';
import type { JobHandler, JobRun } from './job-handlers';

/**
 * `run-stage`: one stage of one deliberation, timed (conclave_stage_duration_seconds) and logged,
 * and listed in this worker's lease while it runs (ActiveStages). A job taken over after its
 * worker stopped (a stall) first tells the deliberation's subscribers that the stage resumes.
 */
@Injectable()
export class RunStageHandler implements JobHandler<StageQueueJobs, typeof JOB_NAMES.stage> {
  readonly jobName = JOB_NAMES.stage;

  constructor(
    private readonly runner: StageRunner,
    private readonly resumer: Resumer,
    private readonly active: ActiveStages,
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

import { Injectable } from '@nestjs/common';
import { JOB_NAMES, type StageQueueJobs, type TitleJobData } from '@conclave/contracts';
import type { JobHandler } from './job-handlers';

/**
 * `generate-title`: nothing left to do. The title call of a new conversation now runs inside the
 * job of its first stage that calls models, beside those calls, and is stored with their outcomes
 * (StageRunner.runStage): a job of its own would load the message and write it once more. Gateways
 * no longer enqueue it; jobs of this name left in a queue by an older release (a rolling upgrade)
 * are acknowledged here without touching PostgreSQL.
 */
@Injectable()
export class GenerateTitleHandler implements JobHandler<StageQueueJobs, typeof JOB_NAMES.title> {
  readonly jobName = JOB_NAMES.title;

  run(_data: TitleJobData): Promise<void> {
    return Promise.resolve();
  }
}

import { Injectable } from '@nestjs/common';
import { JOB_NAMES, type StageQueueJobs, type TitleJobData } from '@conclave/contracts';
import { StageRunner } from '@conclave/deliberation';
import type { JobHandler } from './job-handlers';

/** `generate-title`: the title of a new conversation, from a model call or the fallback. */
@Injectable()
export class GenerateTitleHandler implements JobHandler<StageQueueJobs, typeof JOB_NAMES.title> {
  readonly jobName = JOB_NAMES.title;

  constructor(private readonly runner: StageRunner) {}

  run(data: TitleJobData): Promise<void> {
    return this.runner.generateTitle(data.messageId);
  }
}

import { getQueueToken } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JOB_NAMES, STAGE_QUEUE_DEFINITION, type StageQueueJobs } from '@conclave/contracts';
import { createLogger } from '@conclave/observability';
import { LOGGER } from '@conclave/platform';
import { EventEmitter } from 'node:events';
import { CONSUMER_ERRORS, STAGE_JOB_HANDLERS } from '../tokens';
import type { AnyJobHandler } from './job-handlers';
import { StageProcessor } from './stage.processor';

class RunStage {
  readonly jobName = JOB_NAMES.stage;
  async run(): Promise<void> {}
}
class RunStageAgain extends RunStage {}
class GenerateTitle {
  readonly jobName = JOB_NAMES.title;
  async run(): Promise<void> {}
}

@Module({})
class ProbeModule {}

/** The processor with these handlers and stand-ins for the rest of what it is built with. */
function withHandlers(handlers: AnyJobHandler<StageQueueJobs>[]): DynamicModule {
  return {
    module: ProbeModule,
    providers: [
      { provide: STAGE_JOB_HANDLERS, useValue: handlers },
      { provide: LOGGER, useValue: createLogger('silent', 'worker') },
      { provide: CONSUMER_ERRORS, useValue: () => undefined },
      { provide: getQueueToken(STAGE_QUEUE_DEFINITION.name), useValue: new EventEmitter() },
      StageProcessor,
    ],
  };
}

const start = (handlers: AnyJobHandler<StageQueueJobs>[]) =>
  NestFactory.createApplicationContext(withHandlers(handlers), { logger: false, abortOnError: false });

describe('StageProcessor at start-up', () => {
  it('stops the start when a job name of the stage queue has no handler, naming it', async () => {
    await expect(start([new RunStage()])).rejects.toThrow(
      'queue deliberation-stages: every job name needs exactly one handler: job "generate-title" has no handler',
    );
  });

  it('stops the start when a job name has two handlers, naming it and them', async () => {
    await expect(start([new RunStage(), new GenerateTitle(), new RunStageAgain()])).rejects.toThrow(
      'job "run-stage" has 2 handlers (RunStage, RunStageAgain)',
    );
  });

  it('starts with one handler per job name', async () => {
    const app = await start([new GenerateTitle(), new RunStage()]);
    expect(app.get(StageProcessor)).toBeInstanceOf(StageProcessor);
    await app.close();
  });
});

import {
  JOB_NAMES,
  STAGE_QUEUE_DEFINITION,
  type QueueDefinition,
  type StageQueueJobs,
} from '@conclave/contracts';
import { JobHandlerMap, type AnyJobHandler, type JobHandler } from './job-handlers';

interface PrintJobs {
  print: { text: string };
  count: { n: number };
}

const PRINT_QUEUE: QueueDefinition<PrintJobs> = {
  name: 'printing',
  payloads: {
    print: (data): data is { text: string } =>
      typeof data === 'object' && data !== null && 'text' in data && typeof data.text === 'string',
    count: (data): data is { n: number } =>
      typeof data === 'object' && data !== null && 'n' in data && typeof data.n === 'number',
  },
};

class Printer implements JobHandler<PrintJobs, 'print'> {
  readonly jobName = 'print';
  readonly printed: string[] = [];
  async run(data: { text: string }): Promise<void> {
    this.printed.push(data.text);
  }
}

class SecondPrinter extends Printer {}

class Counter implements JobHandler<PrintJobs, 'count'> {
  readonly jobName = 'count';
  readonly failed: number[] = [];
  async run(): Promise<void> {}
  async failedForGood(data: { n: number }): Promise<void> {
    this.failed.push(data.n);
  }
}

describe('JobHandlerMap: one handler per job name, checked at start', () => {
  it('refuses a job name without a handler, naming the queue and the job', () => {
    expect(() => new JobHandlerMap(PRINT_QUEUE, [new Printer()])).toThrow(
      'queue printing: every job name needs exactly one handler: job "count" has no handler',
    );
  });

  it('refuses a job name with two handlers, naming the job and both handlers', () => {
    expect(() => new JobHandlerMap(PRINT_QUEUE, [new Printer(), new Counter(), new SecondPrinter()])).toThrow(
      'queue printing: every job name needs exactly one handler: job "print" has 2 handlers (Printer, SecondPrinter)',
    );
  });

  it('accepts the stage queue with one handler per job name', () => {
    const handlers: AnyJobHandler<StageQueueJobs>[] = [
      { jobName: JOB_NAMES.title, run: async () => undefined },
      { jobName: JOB_NAMES.stage, run: async () => undefined },
    ];
    expect(() => new JobHandlerMap(STAGE_QUEUE_DEFINITION, handlers)).not.toThrow();
    expect(() => new JobHandlerMap(STAGE_QUEUE_DEFINITION, handlers.slice(1))).toThrow(
      'queue deliberation-stages: every job name needs exactly one handler: job "generate-title" has no handler',
    );
  });

  it("runs a job with its name's handler, and refuses an unknown name or a malformed payload", async () => {
    const printer = new Printer();
    const jobs = new JobHandlerMap(PRINT_QUEUE, [printer, new Counter()]);
    await jobs.run({ name: 'print', data: { text: 'hello' } });
    expect(printer.printed).toEqual(['hello']);
    await expect(jobs.run({ name: 'shout', data: { text: 'hello' } })).rejects.toThrow(
      'no handler for job shout',
    );
    await expect(jobs.run({ name: 'print', data: { n: 1 } })).rejects.toThrow(
      'job print carries a payload its queue does not define',
    );
    expect(printer.printed).toEqual(['hello']);
  });

  it('reads payloads only through their checks, and tells a handler that wants to know of a final failure', async () => {
    const counter = new Counter();
    const jobs = new JobHandlerMap(PRINT_QUEUE, [new Printer(), counter]);
    expect(jobs.payloadOf({ name: 'count', data: { n: 3 } })).toEqual({ n: 3 });
    expect(jobs.payloadOf({ name: 'count', data: { n: '3' } })).toBeUndefined();
    expect(jobs.payloadOf({ name: 'other', data: { n: 3 } })).toBeUndefined();
    await jobs.failedForGood({ name: 'count', data: { n: 3 } });
    await jobs.failedForGood({ name: 'print', data: { text: 'no hook' } });
    expect(counter.failed).toEqual([3]);
  });
});

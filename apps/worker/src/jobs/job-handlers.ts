import { isJobName, jobNames, type JobName, type QueueDefinition } from '@conclave/contracts';

/** What a handler may know about the job it runs besides its payload. */
export interface JobRun {
  /** The job's first start: not one after a stall, a failed attempt or a wait for the store. */
  firstStart: boolean;
  /** How often the job stalled (the worker running it stopped) and was taken over: 0 normally. */
  stalls: number;
}

/** Runs the jobs of one name of a queue, with that name's payload. */
export interface JobHandler<Jobs extends object, N extends JobName<Jobs>> {
  readonly jobName: N;
  run(data: Jobs[N], job: JobRun): Promise<void>;
  /**
   * Called once a job of this name has failed for good (its attempts or stalls spent), after the
   * failure is logged. Without it a final failure is only logged.
   */
  failedForGood?(data: Jobs[N]): Promise<void>;
}

/** A handler of any one job name of the queue. */
export type AnyJobHandler<Jobs extends object> = {
  [N in JobName<Jobs>]: JobHandler<Jobs, N>;
}[JobName<Jobs>];

/** A job as BullMQ hands it over: a name and a payload read back from Redis, neither checked yet. */
export interface ReceivedJob {
  readonly name: string;
  readonly data: unknown;
  /** How many times the job was moved to active, this time included (BullMQ's attemptsStarted). */
  readonly attemptsStarted?: number;
  /** How often the job stalled and was moved back to wait (BullMQ's stalledCounter). */
  readonly stalledCounter?: number;
}

/** A handler found under `name` is that name's handler (TypeScript cannot follow a Map's keys). */
function handles<Jobs extends object, N extends JobName<Jobs>>(
  handler: { readonly jobName: string },
  name: N,
): handler is JobHandler<Jobs, N> {
  return handler.jobName === name;
}

const nameOf = (handler: object): string => handler.constructor.name;

/**
 * The handlers of one queue, by job name. Built at start-up: a job name of the queue's definition
 * with no handler or with two stops the start with a message naming it (a handler of a name the
 * queue does not define is a type error). A job then runs with its name's handler once its
 * payload passes the definition's check, so a handler only ever gets its name's payload type.
 */
export class JobHandlerMap<Jobs extends object> {
  private readonly byName = new Map<string, AnyJobHandler<Jobs>>();

  constructor(
    readonly definition: QueueDefinition<Jobs>,
    handlers: readonly AnyJobHandler<Jobs>[],
  ) {
    const problems: string[] = [];
    for (const name of jobNames(definition)) {
      const found = handlers.filter((handler) => handler.jobName === name);
      if (found.length === 1) this.byName.set(name, found[0]);
      else if (found.length === 0) problems.push(`job "${name}" has no handler`);
      else problems.push(`job "${name}" has ${found.length} handlers (${found.map(nameOf).join(', ')})`);
    }
    if (problems.length > 0) {
      throw new Error(
        `queue ${definition.name}: every job name needs exactly one handler: ${problems.join('; ')}`,
      );
    }
  }

  /** The job's payload when its name is one of the queue's and the payload passes that name's check. */
  payloadOf(job: ReceivedJob): Jobs[JobName<Jobs>] | undefined {
    const { name, data } = job;
    if (!isJobName(this.definition, name)) return undefined;
    return this.definition.payloads[name](data) ? data : undefined;
  }

  /** Runs the job with its name's handler; a name or payload the queue does not define fails the job. */
  async run(job: ReceivedJob): Promise<void> {
    const { name } = job;
    if (!isJobName(this.definition, name)) throw new Error(`no handler for job ${name}`);
    await this.runAs(name, job.data, {
      firstStart: (job.attemptsStarted ?? 0) <= 1,
      stalls: job.stalledCounter ?? 0,
    });
  }

  /** Tells the job's handler that it failed for good, when the handler wants to know. */
  async failedForGood(job: ReceivedJob): Promise<void> {
    const { name } = job;
    if (isJobName(this.definition, name)) await this.failedForGoodAs(name, job.data);
  }

  private async runAs<N extends JobName<Jobs>>(name: N, data: unknown, run: JobRun): Promise<void> {
    if (!this.definition.payloads[name](data))
      throw new Error(`job ${name} carries a payload its queue does not define`);
    await this.handler(name).run(data, run);
  }

  private async failedForGoodAs<N extends JobName<Jobs>>(name: N, data: unknown): Promise<void> {
    const handler = this.handler(name);
    if (handler.failedForGood && this.definition.payloads[name](data)) await handler.failedForGood(data);
  }

  private handler<N extends JobName<Jobs>>(name: N): JobHandler<Jobs, N> {
    const handler = this.byName.get(name);
    // The constructor checked every name of the queue: this is only reached for a name it has.
    if (!handler || !handles<Jobs, N>(handler, name)) throw new Error(`no handler for job ${name}`);
    return handler;
  }
}

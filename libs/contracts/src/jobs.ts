import type { Grading } from './grading';
import { MODE_NAMES, type ModeName } from './modes';

/**
 * Queue and job names are part of the stored state in Redis: never rename them casually,
 * queued jobs would be stranded.
 */
export const STAGE_QUEUE = 'deliberation-stages' as const;

/** The data-lifecycle (retention) job's own queue: one fleet-wide scheduler, run by any worker. */
export const LIFECYCLE_QUEUE = 'data-lifecycle' as const;

export const JOB_NAMES = {
  stage: 'run-stage',
  title: 'generate-title',
} as const;

export interface StageJobData {
  messageId: string;
  stage: string;
  /** A new conversation's first stage carries the message as the gateway stored it (see FirstStageStart). */
  start?: FirstStageStart;
}

/**
 * What a load of a new conversation's message returns beyond its id and stage, as the gateway's
 * transaction stored it: the job's first start runs from it instead of loading (a burst of new
 * deliberations otherwise queues a load per deliberation on the pool when PostgreSQL is busiest).
 * No history, rows or outcomes yet; status `queued`; a title to make; no batch. The stage's opening
 * is still written with its guard, so a stop that came first is still seen.
 */
export interface FirstStageStart {
  conversationId: string;
  mode: ModeName;
  /** The user message's content. */
  question: string;
  /** The message's config as PostgreSQL returned it (jsonb's key order). */
  config: unknown;
  /** The message's created_at, ISO 8601. */
  createdAt: string;
  /** A graded turn's grading (issue 37), as its user message's config stores it; absent: ungraded. */
  grading?: Grading;
}

/** Starts bigger than this (a long question or jury content) are not carried: the job loads. */
export const FIRST_STAGE_START_MAX_CHARS = 4096;

export interface TitleJobData {
  messageId: string;
}

/**
 * A queue as producer and consumer both know it: its name, and for each job name the payload a
 * job of that name carries, with a check of it for the consumer (a payload comes back from Redis
 * as plain JSON). The producer adds only these names with these payloads; the consumer has
 * exactly one handler for each name.
 */
export interface QueueDefinition<Jobs extends object> {
  readonly name: string;
  readonly payloads: { readonly [N in JobName<Jobs>]: (data: unknown) => data is Jobs[N] };
}

/** The job names of a queue's payload map. */
export type JobName<Jobs extends object> = keyof Jobs & string;

/** The stage queue's jobs: each name with its payload. Jobs carry ids only; PostgreSQL holds the rest. */
export interface StageQueueJobs {
  [JOB_NAMES.stage]: StageJobData;
  [JOB_NAMES.title]: TitleJobData;
}

const isFirstStageStart = (start: unknown): start is FirstStageStart =>
  typeof start === 'object' &&
  start !== null &&
  'conversationId' in start &&
  typeof start.conversationId === 'string' &&
  'mode' in start &&
  typeof start.mode === 'string' &&
  (MODE_NAMES as readonly string[]).includes(start.mode) &&
  'question' in start &&
  typeof start.question === 'string' &&
  'config' in start &&
  'createdAt' in start &&
  typeof start.createdAt === 'string' &&
  !Number.isNaN(Date.parse(start.createdAt));

const isStageJobData = (data: unknown): data is StageJobData =>
  typeof data === 'object' &&
  data !== null &&
  'messageId' in data &&
  typeof data.messageId === 'string' &&
  'stage' in data &&
  typeof data.stage === 'string' &&
  (!('start' in data) || data.start === undefined || isFirstStageStart(data.start));

const isTitleJobData = (data: unknown): data is TitleJobData =>
  typeof data === 'object' && data !== null && 'messageId' in data && typeof data.messageId === 'string';

export const STAGE_QUEUE_DEFINITION: QueueDefinition<StageQueueJobs> = {
  name: STAGE_QUEUE,
  payloads: {
    [JOB_NAMES.stage]: isStageJobData,
    [JOB_NAMES.title]: isTitleJobData,
  },
};

/** Every job name a queue defines. */
export function jobNames<Jobs extends object>(definition: QueueDefinition<Jobs>): JobName<Jobs>[] {
  return Object.keys(definition.payloads).filter((name) => isJobName(definition, name));
}

/** Whether `name` (a job's name as read from Redis) is one of the queue's job names. */
export function isJobName<Jobs extends object>(
  definition: QueueDefinition<Jobs>,
  name: string,
): name is JobName<Jobs> {
  return Object.prototype.hasOwnProperty.call(definition.payloads, name);
}

/** BullMQ job ids must not contain ':' nor be all digits. */
export const stageJobId = (messageId: string, stage: string): string => `${messageId}__${stage}`;

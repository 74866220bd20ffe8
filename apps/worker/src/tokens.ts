/** Injection tokens of the worker application (the shared ones are in @conclave/platform). */

/** The blocking BullMQ connection the stage worker consumes on (never gives up on a command). */
export const REDIS_CONSUMER = Symbol('REDIS_CONSUMER');
/** The consumer's error listener: one repeat-limited `worker error:` line per kind of error. */
export const CONSUMER_ERRORS = Symbol('CONSUMER_ERRORS');
/** The handlers of the stage queue's jobs, one per job name (checked by the processor at start). */
export const STAGE_JOB_HANDLERS = Symbol('STAGE_JOB_HANDLERS');

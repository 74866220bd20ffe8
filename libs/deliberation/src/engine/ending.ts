import type { DeliberationStore, MessageUpdate, ModeEvent, StageWrite, StageWriteResult } from './types';

/** How a deliberation is ended from outside its stages. */
export type DeliberationEnd =
  /** A user (or a batch's cancel) stopped it: status `cancelled`, last event `cancelled { reason }`. */
  | { kind: 'cancelled'; reason: string }
  /** It cannot go on (the time cap, a job that failed for good): status `failed`, last event `error`. */
  | { kind: 'failed'; message: string };

/** What a call that was running when its deliberation was stopped records as its error. */
export const STOPPED_CALL_ERROR = {
  cancelled: 'cancelled: the deliberation was stopped',
  failed: 'stopped: the deliberation ended',
} as const;

/**
 * The last event of a deliberation that ends other than complete: `cancelled { reason }` or
 * `error { message }` (also a stage's own failure, written with its commit).
 */
export function endingEvent(end: DeliberationEnd): ModeEvent {
  return end.kind === 'cancelled'
    ? { key: 'cancelled', type: 'cancelled', payload: { reason: end.reason } }
    : { key: 'error', type: 'error', payload: { message: end.message } };
}

/** The move of a deliberation that ends other than complete: its final status and error, no further stage. */
export function endingUpdate(end: DeliberationEnd): MessageUpdate {
  return end.kind === 'cancelled'
    ? { status: 'cancelled', stage: null, error: end.reason, completed: true }
    : { status: 'failed', stage: null, error: end.message, completed: true };
}

/**
 * The write that ends a deliberation wherever it is: one event, the final status, no further
 * stage. conclave_stage_write applies it under the message's row lock and skips it when the
 * message has ended meanwhile, so a stop racing the last stage's commit leaves exactly one ending.
 * Everything stored before stays; calls still in flight store their outcomes (usage) when they
 * settle, and their stage's commit is skipped.
 */
export function endingWrite(stage: string | null, end: DeliberationEnd): StageWrite {
  return {
    stage: stage ?? (end.kind === 'cancelled' ? 'cancelled' : 'failure'),
    events: [endingEvent(end)],
    update: endingUpdate(end),
  };
}

/**
 * The one way a run ends from outside its stages: the worker's (the 600 s cap, a job that failed
 * for good: StageRunner.end), a user's stop, a batch's cancel of its running items, an admin's
 * cancel of a user's work and a key's revocation (WorkStops.stop) all write endingWrite through the
 * store's stage write, conclave_stage_write, the only writer of a deliberation. A batch's queued
 * items, ended many at a time (its cancel, its budget), take the same write in one statement
 * (endRuns in libs/persistence). Resolves with the store's answer: `skipped` when the message had
 * ended already, `missing` when it is gone.
 */
export function endRun(
  store: Pick<DeliberationStore, 'writeStage'>,
  messageId: string,
  stage: string | null,
  end: DeliberationEnd,
): Promise<StageWriteResult> {
  return store.writeStage(messageId, endingWrite(stage, end));
}

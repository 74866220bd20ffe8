import type { StageWrite } from './types';

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
 * The write that ends a deliberation wherever it is: one event, the final status, no further
 * stage. conclave_stage_write applies it under the message's row lock and skips it when the
 * message has ended meanwhile, so a stop racing the last stage's commit leaves exactly one ending.
 * Everything stored before stays; calls still in flight store their outcomes (usage) when they
 * settle, and their stage's commit is skipped.
 */
export function endingWrite(stage: string | null, end: DeliberationEnd): StageWrite {
  if (end.kind === 'cancelled') {
    return {
      stage: stage ?? 'cancelled',
      events: [{ key: 'cancelled', type: 'cancelled', payload: { reason: end.reason } }],
      update: { status: 'cancelled', stage: null, error: end.reason, completed: true },
    };
  }
  return {
    stage: stage ?? 'failure',
    events: [{ key: 'error', type: 'error', payload: { message: end.message } }],
    update: { status: 'failed', stage: null, error: end.message, completed: true },
  };
}

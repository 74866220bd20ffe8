import type {
  CallOutcome,
  DeliberationContext,
  LoadedDeliberation,
  MessageUpdate,
  ModeEvent,
  PlannedCall,
  StageTransition,
} from './types';
import { endingEvent, endingUpdate } from './ending';

/** What a mode reads while planning or reducing a stage of the deliberation `loaded` holds. */
export function contextOf(
  loaded: LoadedDeliberation,
  now: number,
  capMs: number,
): DeliberationContext<unknown> {
  return {
    messageId: loaded.messageId,
    conversationId: loaded.conversationId,
    question: loaded.question,
    config: loaded.config,
    ...(loaded.expected !== undefined ? { expected: loaded.expected } : {}),
    history: loaded.history,
    rows: loaded.rows,
    outcomes: loaded.outcomes,
    elapsedMs: now - loaded.createdAt.getTime(),
    deliberationCapMs: capMs,
  };
}

export function progressEvent(
  stage: string,
  call: PlannedCall,
  state: 'started' | 'succeeded' | 'failed' | 'retrying',
  extra: Record<string, unknown> = {},
  keySuffix = '',
): ModeEvent {
  return {
    key: `model_progress:${stage}:${call.key}:${state}${keySuffix}`,
    type: 'model_progress',
    payload: { stage, participant: call.participant, state, ...extra },
  };
}

/** The event that reports how a call settled. */
export function settledEvent(stage: string, call: PlannedCall, outcome: CallOutcome): ModeEvent {
  if (!outcome.ok) {
    return progressEvent(stage, call, 'failed', {
      responseTimeMs: outcome.responseTimeMs,
      error: outcome.error,
    });
  }
  // The answer itself, so a view shows each one as it lands. It goes with `participant`, which is
  // anonymous where the mode keeps authors hidden during the run (Delphi).
  return progressEvent(stage, call, 'succeeded', {
    responseTimeMs: outcome.responseTimeMs,
    content: outcome.content,
    ...(outcome.finishReason === 'length' ? { truncated: true } : {}),
  });
}

/** Events to deliver as a call settles: its model_progress, then the mode's own (e.g. juror_complete). */
export type SettledEvents = (call: PlannedCall, outcome: CallOutcome) => ModeEvent[];

/**
 * The engine's own events after a stage's: for the end of a deliberation, `title_complete` (its
 * title filled in by the store, and only for a conversation that needs one) and `complete`; for a
 * failure, `error`.
 */
export function closingEvents(transition: StageTransition, withTitle: boolean): ModeEvent[] {
  if (transition.kind === 'next') return [];
  if (transition.kind === 'fail') return [endingEvent({ kind: 'failed', message: transition.message })];
  return [
    ...(withTitle
      ? [{ key: 'title_complete', type: 'title_complete', payload: { data: { title: null } } }]
      : []),
    { key: 'complete', type: 'complete', payload: {} },
  ];
}

export function messageUpdateFor(transition: StageTransition): MessageUpdate {
  if (transition.kind === 'next') return { status: 'running', stage: transition.stage };
  if (transition.kind === 'done') {
    return { status: 'complete', stage: null, content: transition.content, completed: true };
  }
  return endingUpdate({ kind: 'failed', message: transition.message });
}

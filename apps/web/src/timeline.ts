import type { DeliveredEvent } from '@conclave/contracts';

export type CallState = 'waiting' | 'answering' | 'done' | 'failed' | 'retried';

export interface Participant {
  id: string;
  state: CallState;
  responseTimeMs?: number;
  error?: string;
  retries: number;
}

export interface TimelineState {
  stages: { name: string; participants: Participant[] }[];
  events: DeliveredEvent[];
  finished: 'complete' | 'error' | null;
  error: string | null;
}

export const emptyTimeline = (): TimelineState => ({ stages: [], events: [], finished: null, error: null });

const STATE: Record<string, CallState> = {
  started: 'answering',
  succeeded: 'done',
  failed: 'failed',
  retrying: 'retried',
};

/** Folds one event into the timeline; events arrive once each, in seq order. */
export function applyEvent(state: TimelineState, event: DeliveredEvent): TimelineState {
  const next: TimelineState = { ...state, events: [...state.events, event] };
  if (event.type === 'model_progress') {
    const stageName = String(event.stage);
    const id = String(event.participant);
    const stages = [...state.stages];
    let stage = stages.find((s) => s.name === stageName);
    if (!stage) {
      stage = { name: stageName, participants: [] };
      stages.push(stage);
    }
    const participants = [...stage.participants];
    const at = participants.findIndex((p) => p.id === id);
    const before = at >= 0 ? participants[at] : { id, state: 'waiting' as CallState, retries: 0 };
    const updated: Participant = {
      ...before,
      state: STATE[String(event.state)] ?? before.state,
      retries: before.retries + (event.state === 'retrying' ? 1 : 0),
      ...(typeof event.responseTimeMs === 'number' ? { responseTimeMs: event.responseTimeMs } : {}),
      ...(typeof event.error === 'string' ? { error: event.error } : {}),
    };
    if (at >= 0) participants[at] = updated;
    else participants.push(updated);
    stages[stages.indexOf(stage)] = { ...stage, participants };
    next.stages = stages;
  }
  if (event.type === 'complete') next.finished = 'complete';
  if (event.type === 'error') {
    next.finished = 'error';
    next.error = String(event.message);
  }
  return next;
}

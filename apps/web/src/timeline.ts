import { appendLivePiece, type DeliveredEvent, type LiveEvent } from '@conclave/contracts';
import { describeLine, participantLabel } from '@conclave/deliberation/event-text';

/** `stopped`: the call was still running when the deliberation was cancelled or failed. */
export type CallState = 'waiting' | 'answering' | 'done' | 'failed' | 'retried' | 'stopped';

export interface Participant {
  id: string;
  /** Who to show: the model, or "Panelist n" where the mode keeps authors anonymous (Delphi). */
  label: string;
  state: CallState;
  responseTimeMs?: number;
  error?: string;
  retries: number;
  /** The answer: as streamed so far, then the whole of it once the call succeeded (`final`). */
  text: string;
  final: boolean;
  /** The provider cut the answer at its length limit. */
  truncated: boolean;
  /** When the call started and when it settled (the events' `at`), for its elapsed time. */
  startedAt?: string;
  settledAt?: string;
}

export interface Stage {
  name: string;
  participants: Participant[];
}

export interface TimelineState {
  stages: Stage[];
  /** Every stored event, in seq order (live pieces are not kept here). */
  events: DeliveredEvent[];
  finished: 'complete' | 'error' | 'cancelled' | null;
  /** The error's message, or why the deliberation was cancelled. */
  error: string | null;
  /** When it ended (its last event's `at`). */
  endedAt: string | null;
  /**
   * The last `resumed` event as a line (`Resuming stage1 (the worker running it stopped).`): a
   * stage interrupted by a fault runs again; shown until the deliberation ends.
   */
  resumed: string | null;
}

export const emptyTimeline = (): TimelineState => ({
  stages: [],
  events: [],
  finished: null,
  error: null,
  endedAt: null,
  resumed: null,
});

const STATE: Record<string, CallState> = {
  started: 'answering',
  succeeded: 'done',
  failed: 'failed',
  retrying: 'retried',
};

const SETTLED: readonly CallState[] = ['done', 'failed', 'stopped'];

/** Who made a call, in the event describer's words: the model, or "Panelist n" (Delphi). */
export const labelOf = (participant: unknown): string => participantLabel(participant, 'web');

/**
 * The state with one call changed by `change` (which gets the call, or a new one, and returns its
 * next version, or null for no change). Returns `state` itself when nothing changed.
 */
function withCall(
  state: TimelineState,
  stageName: string,
  participant: unknown,
  change: (call: Participant) => Participant | null,
): TimelineState {
  const id = String(participant);
  const stageAt = state.stages.findIndex((s) => s.name === stageName);
  const stage: Stage = stageAt >= 0 ? state.stages[stageAt] : { name: stageName, participants: [] };
  const at = stage.participants.findIndex((p) => p.id === id);
  const before: Participant =
    at >= 0
      ? stage.participants[at]
      : {
          id,
          label: labelOf(participant),
          state: 'waiting',
          retries: 0,
          text: '',
          final: false,
          truncated: false,
        };
  const after = change(before);
  if (after === null) return state;
  const participants = [...stage.participants];
  if (at >= 0) participants[at] = after;
  else participants.push(after);
  const stages = [...state.stages];
  if (stageAt >= 0) stages[stageAt] = { ...stage, participants };
  else stages.push({ ...stage, participants });
  return { ...state, stages };
}

function applyProgress(state: TimelineState, event: DeliveredEvent): TimelineState {
  return withCall(state, String(event.stage), event.participant, (before) => {
    const next: Participant = {
      ...before,
      state: STATE[String(event.state)] ?? before.state,
      retries: before.retries + (event.state === 'retrying' ? 1 : 0),
      ...(typeof event.responseTimeMs === 'number' ? { responseTimeMs: event.responseTimeMs } : {}),
      ...(typeof event.error === 'string' ? { error: event.error } : {}),
    };
    if (event.state === 'started') next.startedAt ??= event.at;
    if (event.state === 'succeeded' || event.state === 'failed') next.settledAt = event.at;
    // The answer as stored replaces what was streamed.
    if (event.state === 'succeeded' && typeof event.content === 'string') {
      next.text = event.content;
      next.final = true;
    }
    if (event.state === 'succeeded' && event.truncated === true) next.truncated = true;
    // A new attempt writes its answer from the start.
    if (event.state === 'retrying' && !before.final) next.text = '';
    return next;
  });
}

/** Calls still running when the deliberation ended stop where they were, their text kept. */
function stopRunning(stages: Stage[], at: string): Stage[] {
  return stages.map((stage) => ({
    ...stage,
    participants: stage.participants.map((p) =>
      SETTLED.includes(p.state) ? p : { ...p, state: 'stopped', settledAt: p.settledAt ?? at },
    ),
  }));
}

/** Folds one stored event into the timeline; events arrive once each, in seq order. */
export function applyEvent(state: TimelineState, event: DeliveredEvent): TimelineState {
  let next: TimelineState = { ...state, events: [...state.events, event] };
  if (event.type === 'model_progress') next = applyProgress(next, event);
  if (event.type === 'resumed') next = { ...next, resumed: describeLine(event, 'web') };
  if (event.type === 'complete') next = { ...next, finished: 'complete', endedAt: event.at };
  if (event.type === 'error' || event.type === 'cancelled') {
    next = {
      ...next,
      finished: event.type,
      error: String(event.type === 'error' ? event.message : event.reason),
      endedAt: event.at,
      stages: stopRunning(next.stages, event.at),
    };
  }
  return next;
}

/**
 * Folds a live piece into the timeline: `model_delta` continues a call's answer at its offset,
 * `model_partial` is all of it so far. Pieces of a call that has settled, or of a deliberation that
 * has ended, change nothing (the same state comes back).
 */
export function applyLive(state: TimelineState, event: LiveEvent): TimelineState {
  if (state.finished) return state;
  return withCall(state, event.stage, event.participant, (before) => {
    if (before.final || SETTLED.includes(before.state)) return null;
    const text =
      event.type === 'model_partial' ? event.text : appendLivePiece(before.text, event.offset, event.text);
    if (text === before.text && before.state !== 'waiting') return null;
    return { ...before, text, state: before.state === 'waiting' ? 'answering' : before.state };
  });
}

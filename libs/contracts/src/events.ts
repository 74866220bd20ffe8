import type { Stage1Response, Stage2Metadata, Stage2Response, Stage3Response } from './council';

/** Fields every delivered event carries besides its mode payload (00-shared.md §4). */
export interface EventEnvelope {
  type: string;
  messageId: string;
  seq: number;
  at: string;
}

export type DeliveredEvent<P extends object = Record<string, unknown>> = EventEnvelope & P;

export type ModelCallState = 'started' | 'succeeded' | 'failed' | 'retrying';

export interface ModelProgressPayload {
  stage: string;
  participant: string | number;
  state: ModelCallState;
  responseTimeMs?: number;
  error?: string;
  /** On `succeeded`: the answer, so a view can show each one as it lands. */
  content?: string;
  /** On `succeeded`, when the provider cut the answer short at its length limit. */
  truncated?: true;
}

/** The last event of a deliberation that was stopped (deviations.md §10). */
export interface CancelledPayload {
  reason: string;
}

/**
 * Why work in flight is being run again (the `resumed` extension event): the worker running the
 * stage stopped (`worker_lost`), Redis lost the queue holding its job (`queue_lost`), or the
 * reconciler found it had stopped moving (`stalled`).
 */
export type ResumeReason = 'worker_lost' | 'queue_lost' | 'stalled';

/**
 * `resumed`: a stored extension event (it has a `seq`) saying that a stage interrupted by a fault
 * is being run again, and why; answers already stored are kept, not asked for again. It may come
 * at any point before the end and changes nothing in the mode's own sequence.
 */
export interface ResumedPayload {
  stage: string;
  reason: ResumeReason;
  /** A short sentence for people: what happened and that the deliberation goes on. */
  message: string;
}

/** Why a stage resumes, in a few words, for the one-line renderings of `resumed` (CLI, MCP, /v1, web). */
export const RESUME_REASON_TEXT: Readonly<Record<ResumeReason, string>> = {
  worker_lost: 'the worker running it stopped',
  queue_lost: 'the job queue lost it',
  stalled: 'it had stopped moving',
};

/** `resuming stage2 (the worker running it stopped)`: one line for a `resumed` event. */
export function resumedLine(event: Readonly<Record<string, unknown>>): string {
  const stage = typeof event.stage === 'string' ? event.stage : 'the stage';
  const why =
    typeof event.reason === 'string' && event.reason in RESUME_REASON_TEXT
      ? ` (${RESUME_REASON_TEXT[event.reason as ResumeReason]})`
      : '';
  return `resuming ${stage}${why}`;
}

export interface ErrorPayload {
  message: string;
}

/** The payload of an event that carries only the envelope (`stage2_start`, `complete`). */
export type NoPayload = Record<never, never>;

export interface CouncilEventPayloads {
  stage1_start: { conversationId: string; messageId: string };
  stage1_complete: { data: Stage1Response[] };
  stage2_start: NoPayload;
  stage2_complete: { data: Stage2Response[]; metadata: Stage2Metadata };
  stage3_start: NoPayload;
  stage3_complete: { data: Stage3Response };
  title_complete: { data: { title: string } };
  complete: NoPayload;
  error: ErrorPayload;
  model_progress: ModelProgressPayload;
}

/**
 * Stored events any mode may send besides its own (deviations.md 7 and 10, and `resumed` of
 * issue 34); `model_delta` / `model_partial` are live and typed in live.ts.
 */
export interface ExtensionEventPayloads {
  model_progress: ModelProgressPayload;
  cancelled: CancelledPayload;
  resumed: ResumedPayload;
}

export const TERMINAL_EVENT_TYPES: readonly string[] = ['complete', 'error', 'cancelled'];

/** The Redis pub/sub channel (under the deployment's key prefix) that carries every stored event. */
export const eventsChannel = (prefix: string): string => `${prefix}:events`;

/** The Redis channel on which workers say that a batch has moved (gateways then send `batch_progress`). */
export const batchesChannel = (prefix: string): string => `${prefix}:batches`;

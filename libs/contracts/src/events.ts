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

export interface ErrorPayload {
  message: string;
}

export interface CouncilEventPayloads {
  stage1_start: { conversationId: string; messageId: string };
  stage1_complete: { data: Stage1Response[] };
  stage2_start: Record<string, never>;
  stage2_complete: { data: Stage2Response[]; metadata: Stage2Metadata };
  stage3_start: Record<string, never>;
  stage3_complete: { data: Stage3Response };
  title_complete: { data: { title: string } };
  complete: Record<string, never>;
  error: ErrorPayload;
  model_progress: ModelProgressPayload;
}

export const TERMINAL_EVENT_TYPES: readonly string[] = ['complete', 'error', 'cancelled'];

/** The Redis pub/sub channel (under the deployment's key prefix) that carries every stored event. */
export const eventsChannel = (prefix: string): string => `${prefix}:events`;

/** The Redis channel on which workers say that a batch has moved (gateways then send `batch_progress`). */
export const batchesChannel = (prefix: string): string => `${prefix}:batches`;

import type { BatchView } from './batches';
import type { DeliveredEvent } from './events';
import type { LiveEvent } from './live';
import type { DeliberationAccepted, DeliberationRequest } from './modes';

/**
 * The Socket.IO protocol of the `/deliberations` namespace (00-shared.md §4), typed for
 * `Server`/`Socket` in the gateway and `io()` in the web client and the CLI.
 */

/**
 * A refusal in an ack, as HTTP gives it for the same condition: its status, message and fields,
 * and `retryAfterSeconds` (HTTP's Retry-After) on every 429 and 503.
 */
export interface AckError {
  statusCode: number;
  message: string;
  fields?: Record<string, string>;
  retryAfterSeconds?: number;
}

export interface AckRefusal {
  error: AckError;
}

/** An ack: the answer `T`, or the refusal. */
export type Ack<T extends object = { ok: true }> = T | AckRefusal;

/** The body of POST /api/deliberations, plus the Idempotency-Key header's value. */
export type DeliberateRequest = DeliberationRequest & { idempotencyKey?: string };

/** One target per subscription: a deliberation (`messageId`, with its options) or a batch (`batchId`). */
export interface SubscribeRequest {
  messageId?: string;
  /** Replay the stored events after this seq (0: all). */
  afterSeq?: number;
  /** Also the live pieces of the answers being written (`model_delta`, `model_partial`). */
  deltas?: boolean;
  batchId?: string;
}

/** `messageId` or `batchId`, not both. */
export interface UnsubscribeRequest {
  messageId?: string;
  batchId?: string;
}

export interface CancelRequest {
  messageId: string;
}

export interface CancelAccepted {
  ok: true;
  status: 'cancelled';
}

/** What a client sends; each is answered by an ack. */
export interface ClientToServerEvents {
  deliberate: (request: DeliberateRequest, ack: (answer: Ack<DeliberationAccepted>) => void) => void;
  subscribe: (request: SubscribeRequest, ack: (answer: Ack) => void) => void;
  unsubscribe: (request: UnsubscribeRequest, ack: (answer: Ack) => void) => void;
  cancel: (request: CancelRequest, ack: (answer: Ack<CancelAccepted>) => void) => void;
}

/** A client event's name. */
export type ClientEvent = keyof ClientToServerEvents;

/** What a client event sends. */
export type SocketRequest<E extends ClientEvent> = Parameters<ClientToServerEvents[E]>[0];

/** What the server's ack to a client event answers: the answer, or the refusal. */
export type SocketAck<E extends ClientEvent> = Parameters<Parameters<ClientToServerEvents[E]>[1]>[0];

export type BatchEventType = 'batch_progress' | 'batch_complete';

/** A snapshot of a subscribed batch: when it moved (`batch_progress`), and once per finish (`batch_complete`). */
export type BatchEvent = { type: BatchEventType } & BatchView;

/** Any event the server sends on the namespace. */
export type ServerEvent = DeliveredEvent | LiveEvent | BatchEvent;

/**
 * A listener of any server event, compared bivariantly (as a method is), so that the named events
 * of ServerToClientEvents can narrow its `ServerEvent`.
 */
type ServerEventListener = { listener(event: ServerEvent): void }['listener'];

/**
 * What the server sends, each under its `type` as the event name: a subscribed deliberation's
 * stored events (every mode's, so any other name), live pieces and batch snapshots.
 */
export interface ServerToClientEvents {
  /** A stored event of a subscribed deliberation (`seq`, replayed after `afterSeq`). */
  [type: string]: ServerEventListener;
  model_delta: (event: LiveEvent) => void;
  model_partial: (event: LiveEvent) => void;
  batch_progress: (event: BatchEvent) => void;
  batch_complete: (event: BatchEvent) => void;
}

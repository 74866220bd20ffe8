/**
 * Live, ephemeral events (deviations.md §10): `model_delta` and `model_partial` carry the text of a
 * streaming model call. They have no `seq`, are never stored or replayed, and go only to
 * subscribers that asked for them (`subscribe { deltas: true }`, SSE `?deltas=1`).
 */

/** A piece of a streaming call's answer: `text` continues the answer at character `offset`. */
export interface ModelDeltaPayload {
  stage: string;
  /** As in `model_progress`: the model id, or the 1-based index where the mode keeps authors anonymous. */
  participant: string | number;
  /** The model, or null where the mode keeps authors anonymous during the run (Delphi). */
  model: string | null;
  text: string;
  offset: number;
}

/** The whole answer so far of a call that is still running, sent once to a subscriber that joins mid-call. */
export interface ModelPartialPayload {
  stage: string;
  participant: string | number;
  model: string | null;
  text: string;
}

export type LiveEvent =
  | ({ type: 'model_delta'; messageId: string } & ModelDeltaPayload)
  | ({ type: 'model_partial'; messageId: string } & ModelPartialPayload);

/** Which call of a message a live piece belongs to (`<stage>:<call key>`); used to stitch, not sent to clients. */
export interface LiveCallId {
  call: string;
}

/** What a worker publishes on a message's live channel. */
export type LiveChannelMessage =
  | { kind: 'deltas'; deltas: (ModelDeltaPayload & LiveCallId)[] }
  /** The answer so far of each call the worker runs for the message, for the watcher `replyTo`. */
  | { kind: 'partials'; replyTo: string; partials: (ModelPartialPayload & LiveCallId)[] };

/** What gateways tell every worker. */
export type ControlMessage =
  /** Abort the message's calls in flight (the message has already been ended in the store). */
  | { type: 'cancel'; messageId: string }
  /** Someone watches the message: publish its deltas, and send `replyTo` the answers so far. */
  | { type: 'watch'; messageId: string; replyTo: string };

/** The Redis channel that carries one message's live pieces (published only while someone watches). */
export const liveChannel = (prefix: string, messageId: string): string => `${prefix}:live:${messageId}`;

/** The Redis channel gateways use to reach every worker (cancel, watch). */
export const controlChannel = (prefix: string): string => `${prefix}:control`;

/** The longest a coalesced delta waits: no call sends more than 1000 / this many deltas a second. */
export const DELTA_INTERVAL_MS = 50;

/**
 * Adds a live piece to a call's text as a client sees it: `piece` continues the answer at
 * character `offset`. What the text already has is not added again (a duplicate, or the
 * overlapping start of a piece); a piece beyond its end (pieces were missed) is left out: the
 * whole answer comes with the call's `succeeded` event.
 */
export function appendLivePiece(text: string, offset: number, piece: string): string {
  if (!Number.isInteger(offset) || offset < 0 || offset > text.length) return text;
  if (offset + piece.length <= text.length) return text;
  return text + piece.slice(text.length - offset);
}

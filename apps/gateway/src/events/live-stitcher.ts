import type { LiveCallId, ModelDeltaPayload, ModelPartialPayload } from '@conclave/contracts';

/** What a watcher is sent: a `model_partial` (the answer so far) or a `model_delta` (a piece of it). */
export type StitchedPiece =
  ({ type: 'model_partial' } & ModelPartialPayload) | ({ type: 'model_delta' } & ModelDeltaPayload);

/** How long pieces that skip ahead wait for the answer so far that fills the hole before them. */
export const GAP_WAIT_MS = 1000;
/** More held pieces than this for one call: stop waiting for the hole to be filled. */
const MAX_HELD_PIECES = 256;

interface Segment {
  offset: number;
  text: string;
  /** The first text of the call this watcher gets: it goes out as `model_partial`. */
  partial: boolean;
}

interface CallState {
  stage: string;
  participant: string | number;
  model: string | null;
  /** Up to where the answer has been sent or queued for this watcher. */
  end: number;
  /** Ready to send, not sent yet (the client is behind, or take() has not run). */
  queue: Segment[];
  /** Pieces beyond `end`: something before them is missing (a partial is on its way). */
  held: { offset: number; text: string }[];
  /** When the oldest held piece arrived. */
  heldSince: number | null;
  /** What the watcher has of the answer, from its start; null once a hole was left open. */
  text: string | null;
  /** The call has settled: its stored answer was completed here, nothing more of it is sent. */
  done: boolean;
}

/**
 * Stitches one watcher's view of a message's streaming calls out of what workers publish: the
 * answer so far of each running call (`partials`, sent when someone starts watching, possibly for
 * another watcher) and coalesced deltas (each continues a call's answer at an offset). The watcher
 * gets every character once and in order: the first text of a call it joins mid-way as one
 * `model_partial`, everything after as `model_delta`s whose offsets follow on. A delta that skips
 * ahead (pieces published before the partial that covers them reached us) is held until a partial
 * fills the hole; after GAP_WAIT_MS it goes out as it is (with its offset), the hole left open.
 *
 * What is queued and not yet taken is coalesced per call, so a slow client holds at most the text
 * of the answers in flight, however many deltas arrive meanwhile.
 */
export class LiveStitcher {
  private readonly calls = new Map<string, CallState>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly gapWaitMs = GAP_WAIT_MS,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  /** The answer so far of a running call. */
  partial(piece: ModelPartialPayload & LiveCallId): void {
    const call = this.callOf(piece);
    if (call.done) return;
    if (call.end === 0 && piece.text.length > 0) {
      // Nothing of the call yet: it starts with the answer so far; held deltas may continue it.
      call.queue.push({ offset: 0, text: piece.text, partial: true });
      call.end = piece.text.length;
      call.text = piece.text;
      if (call.held.length > 0) this.release(call);
    } else {
      // Some of it already: only what goes beyond, as a delta.
      this.accept(call, 0, piece.text);
    }
  }

  /** A piece of a call's answer at `offset`. */
  delta(piece: ModelDeltaPayload & LiveCallId): void {
    if (piece.text.length === 0) return;
    this.accept(this.callOf(piece), piece.offset, piece.text);
  }

  /**
   * A call settled with `content`, its stored answer (the `succeeded` event, about to be sent): the
   * rest of the answer the watcher has not had yet is queued as a delta, so its pieces add up to the
   * stored answer even when the last ones are still on their way (they are dropped when they come).
   * Only for a call the watcher has text of; one told apart by stage and participant alone.
   */
  complete(stage: string, participant: string | number, content: string): void {
    const matching = [...this.calls.values()].filter(
      (c) => c.stage === stage && c.participant === participant,
    );
    if (matching.length !== 1) return;
    const [call] = matching;
    if (call.done) return;
    call.done = true;
    call.held = [];
    call.heldSince = null;
    // A stored answer that is not a continuation (markers taken out of it, say) is read whole from the event.
    if (call.end === 0 || call.text === null || !content.startsWith(call.text)) return;
    if (content.length > call.end) this.append(call, call.end, content.slice(call.end));
  }

  /** Everything ready to send, in order per call; marked sent. */
  take(): StitchedPiece[] {
    const out: StitchedPiece[] = [];
    for (const call of this.calls.values()) {
      for (const segment of call.queue) {
        const { stage, participant, model } = call;
        out.push(
          segment.partial
            ? { type: 'model_partial', stage, participant, model, text: segment.text }
            : { type: 'model_delta', stage, participant, model, text: segment.text, offset: segment.offset },
        );
      }
      call.queue = [];
    }
    return out;
  }

  /** When held pieces must stop waiting (for a timer), or null when none are held. */
  nextDeadline(): number | null {
    let next: number | null = null;
    for (const call of this.calls.values()) {
      if (call.heldSince === null) continue;
      const at = call.heldSince + this.gapWaitMs;
      if (next === null || at < next) next = at;
    }
    return next;
  }

  /** Held pieces that have waited GAP_WAIT_MS go out as they are; returns how many calls had some. */
  expire(): number {
    let expired = 0;
    const now = this.now();
    for (const [id, call] of this.calls) {
      if (call.heldSince === null || now - call.heldSince < this.gapWaitMs) continue;
      expired += 1;
      const next = Math.min(...call.held.map((p) => p.offset));
      this.log(`live ${id}: characters ${call.end} to ${next} never came; sending what follows them`);
      this.release(call, true);
    }
    return expired;
  }

  private callOf(piece: ModelPartialPayload & LiveCallId): CallState {
    let call = this.calls.get(piece.call);
    if (!call) {
      call = {
        stage: piece.stage,
        participant: piece.participant,
        model: piece.model,
        end: 0,
        queue: [],
        held: [],
        heldSince: null,
        text: '',
        done: false,
      };
      this.calls.set(piece.call, call);
    }
    return call;
  }

  private accept(call: CallState, offset: number, text: string): void {
    if (call.done || offset + text.length <= call.end) return;
    if (offset > call.end) {
      call.held.push({ offset, text });
      call.heldSince ??= this.now();
      if (call.held.length > MAX_HELD_PIECES) {
        this.log(`more than ${MAX_HELD_PIECES} pieces wait for a hole to be filled: sending them`);
        this.release(call, true);
      }
      return;
    }
    this.append(call, call.end, text.slice(call.end - offset));
    if (call.held.length > 0) this.release(call);
  }

  /** Queues what the held pieces now continue; with `force`, also those beyond a hole. */
  private release(call: CallState, force = false): void {
    call.held.sort((a, b) => a.offset - b.offset);
    const keep: { offset: number; text: string }[] = [];
    for (const piece of call.held) {
      if (piece.offset + piece.text.length <= call.end) continue;
      if (piece.offset <= call.end) this.append(call, call.end, piece.text.slice(call.end - piece.offset));
      else if (force) this.append(call, piece.offset, piece.text);
      else keep.push(piece);
    }
    call.held = keep;
    if (keep.length === 0) call.heldSince = null;
  }

  private append(call: CallState, offset: number, text: string): void {
    const last = call.queue.at(-1);
    if (last && last.offset + last.text.length === offset) last.text += text;
    else call.queue.push({ offset, text, partial: false });
    call.text = call.text !== null && offset === call.end ? call.text + text : null;
    call.end = offset + text.length;
  }
}

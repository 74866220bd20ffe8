import { TERMINAL_EVENT_TYPES, type DeliveredEvent } from '@conclave/contracts';
import { isStoreUnavailable, type StoredReplay } from '@conclave/persistence';

/**
 * The events stored after a seq, and whether the deliberation has ended (or is gone), read in one
 * snapshot (the store's replayAfter): when it ended by a stage write, its terminal event is among
 * the events, when due.
 */
export type FetchAfter = (afterSeq: number) => Promise<StoredReplay>;

/**
 * Delivers one message's events to one subscriber in seq order, exactly once: first whatever is
 * stored after `afterSeq`, then live events. A live event that skips ahead (a missed publish)
 * triggers a fetch of the missing ones from the store. Work is serialized, so replay and live
 * events never interleave; after each event it waits while `room` says the subscriber has not read
 * enough yet (backpressure). Ends after `complete` or `error`.
 */
/** A delivery's first replay asked of another source than fetchAfter (see OrderedDelivery.start). */
export interface FirstReplay {
  fetch: (afterSeq: number) => Promise<StoredReplay | null>;
  gate: Promise<void>;
}

export class OrderedDelivery {
  /** The first replay when start was given one (null before start, or without one). */
  firstReplay: Promise<StoredReplay | null> | null = null;
  private lastSeq: number;
  private chain: Promise<void> = Promise.resolve();
  private ended = false;
  private started: Promise<void> | null = null;

  constructor(
    afterSeq: number,
    private readonly fetchAfter: FetchAfter,
    private readonly send: (event: DeliveredEvent) => void,
    private readonly onEnd: (reason: 'terminal' | 'closed' | 'failed') => void = () => undefined,
    /** After each event sent: null to go on, or a promise to wait for (the subscriber's backlog). */
    private readonly room: () => Promise<void> | null = () => null,
  ) {
    this.lastSeq = afterSeq;
  }

  get lastDeliveredSeq(): number {
    return this.lastSeq;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /**
   * Resolves once the first replay is done: the events stored after `afterSeq` have been sent (or
   * the delivery has ended; see isEnded). Live extras (deltas) start after it.
   */
  get caughtUp(): Promise<void> {
    return this.started ?? Promise.resolve();
  }

  /**
   * Replays what is stored; call after the live listener is registered so nothing falls between.
   * With `first`, the first replay is asked of `first.fetch` at once (it may check more, such as
   * who owns the message: null refuses the subscriber, and the delivery ends without sending
   * anything), and nothing is sent before `first.gate` resolves (the caller's answer to the
   * subscriber has gone out). `firstReplay` is that replay, for the caller to decide on.
   */
  start(first?: FirstReplay): Promise<void> {
    const initial = first ? { replay: first.fetch(this.lastSeq), gate: first.gate } : undefined;
    this.firstReplay = initial?.replay ?? null;
    // Its failure is for whoever decides on it (firstReplay); it also ends the delivery (catchUp).
    initial?.replay.catch(() => undefined);
    this.started = this.enqueue(async () => {
      const finished = await this.catchUp(initial);
      // Read with the events: had it ended by a stage write, its terminal event was among them if
      // it was due, and a subscriber already past it is done (as is one of a batch item cancelled
      // while queued before such items got their `cancelled` event: it ends with its status alone).
      if (!this.ended && finished) this.end('terminal');
    });
    return this.started;
  }

  /** Looks for stored events this subscriber has not had (a lost publish, a Redis reconnect). */
  resync(): void {
    void this.enqueue(async () => {
      await this.catchUp();
    });
  }

  offer(event: DeliveredEvent): void {
    void this.enqueue(async () => {
      if (event.seq <= this.lastSeq) return;
      if (event.seq === this.lastSeq + 1) await this.deliver(event);
      else await this.catchUp();
    });
  }

  close(): void {
    this.end('closed');
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(async () => {
      if (this.ended) return;
      try {
        await work();
      } catch (error) {
        // PostgreSQL briefly away: the subscriber stays; the next live event or resync catches up.
        if (isStoreUnavailable(error)) return;
        this.end('failed');
      }
    });
    return this.chain;
  }

  /** Sends what is stored after the last event sent; returns whether the deliberation had ended. */
  private async catchUp(first?: {
    replay: Promise<StoredReplay | null>;
    gate: Promise<void>;
  }): Promise<boolean> {
    let stored: StoredReplay | null;
    try {
      stored = first ? await first.replay : await this.fetchAfter(this.lastSeq);
    } catch (error) {
      // A first replay that could not be read checked nothing (ownership among it): this delivery
      // must not go on to fetches that do not check, whatever its caller does.
      if (first) this.end('failed');
      throw error;
    }
    if (first) await first.gate;
    if (stored === null) {
      this.end('failed');
      return true;
    }
    const { events, finished } = stored;
    for (const event of events) {
      if (this.ended) break;
      if (event.seq === this.lastSeq + 1) await this.deliver(event);
    }
    return finished;
  }

  private async deliver(event: DeliveredEvent): Promise<void> {
    this.lastSeq = event.seq;
    this.send(event);
    if (TERMINAL_EVENT_TYPES.includes(event.type)) return this.end('terminal');
    const wait = this.room();
    if (wait) await wait;
  }

  private end(reason: 'terminal' | 'closed' | 'failed'): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(reason);
  }
}

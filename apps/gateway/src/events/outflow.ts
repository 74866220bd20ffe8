export interface OutflowLimits {
  /** Above this many unread bytes a sender waits for the client to read before it sends more. */
  highWaterBytes: number;
  /** Above this many the client is closed at once (STREAM_MAX_BUFFERED_BYTES). */
  maxBufferedBytes: number;
  /** A backlog above the high-water mark for this long closes the client (STREAM_DRAIN_TIMEOUT_MS). */
  drainTimeoutMs: number;
}

/** How often a waiting sender looks again when no progress event arrives. */
const POLL_MS = 50;

/** The high-water mark: Node's default for sockets is 16 KiB; a few events' worth is enough. */
export const outflowLimits = (streams: {
  maxBufferedBytes: number;
  drainTimeoutMs: number;
}): OutflowLimits => ({
  highWaterBytes: Math.min(64 * 1024, Math.floor(streams.maxBufferedBytes / 2)),
  maxBufferedBytes: streams.maxBufferedBytes,
  drainTimeoutMs: streams.drainTimeoutMs,
});

/**
 * What one client (a Socket.IO socket, an SSE response) has been sent and has not read yet. After
 * each write the sender asks `room()`: null means go on; a promise means wait for it, because the
 * client's backlog is above the high-water mark. A backlog above `maxBufferedBytes`, or one that does
 * not fall below the high-water mark within `drainTimeoutMs`, calls `onSlow` once: the owner closes
 * the client. So a client that stops reading holds a bounded amount of memory for a bounded time,
 * and a replay of many stored events goes out at the pace the client reads it.
 */
export class Outflow {
  private waiting: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private stopped = false;

  constructor(
    /** Bytes written and not yet taken by the network. */
    private readonly buffered: () => number,
    private readonly limits: OutflowLimits,
    private readonly onSlow: (reason: string) => void,
    /** Calls `wake` when the client may have read something (a `drain` event); returns its removal. */
    private readonly onProgress: (wake: () => void) => () => void = () => () => undefined,
  ) {}

  get isWaiting(): boolean {
    return this.waiting !== null;
  }

  /** Null when the sender may go on; otherwise a promise that resolves once it may (or the client is closed). */
  room(): Promise<void> | null {
    if (this.stopped) return null;
    const bytes = this.buffered();
    if (bytes > this.limits.maxBufferedBytes) {
      this.slow(`${bytes} bytes unread, more than ${this.limits.maxBufferedBytes}`);
      return null;
    }
    if (bytes <= this.limits.highWaterBytes) return null;
    this.waiting ??= this.waitForRoom().finally(() => (this.waiting = null));
    return this.waiting;
  }

  /** The client is gone: whoever waits goes on (and finds it closed). */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  private slow(reason: string): void {
    if (this.stopped) return;
    this.stop();
    this.onSlow(reason);
  }

  private waitForRoom(): Promise<void> {
    const deadline = Date.now() + this.limits.drainTimeoutMs;
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      let unsubscribe: () => void = () => undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        unsubscribe();
        this.wake = null;
        resolve();
      };
      const check = () => {
        if (this.stopped) return done();
        const bytes = this.buffered();
        if (bytes > this.limits.maxBufferedBytes) {
          done();
          return this.slow(`${bytes} bytes unread, more than ${this.limits.maxBufferedBytes}`);
        }
        if (bytes <= this.limits.highWaterBytes) return done();
        const left = deadline - Date.now();
        if (left <= 0) {
          done();
          return this.slow(`${bytes} bytes unread for ${this.limits.drainTimeoutMs} ms`);
        }
        if (timer) clearTimeout(timer);
        timer = setTimeout(check, Math.min(POLL_MS, left));
      };
      this.wake = check;
      unsubscribe = this.onProgress(check);
      check();
    });
  }
}

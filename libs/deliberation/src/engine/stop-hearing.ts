/**
 * How far back a process can be sure it heard the stops: whether the control channel on which
 * every stop is announced (a `cancel` from a gateway) has reached it without a break. A stop is
 * stored first (the deliberation's status in PostgreSQL) and announced second; an announcement
 * sent while the channel was down (Redis away, a reconnect) is lost, not delayed.
 *
 * The stage runner starts a stage from state it holds in memory (the next stage its own commit
 * prepared, or the start a new conversation's job carries) only when no stop can have been missed
 * since that state was true: otherwise it loads the message, and finds the stored stop.
 */
export class StopHearing {
  private up: boolean;
  /** How many times the channel was lost: a mark is the count it was taken at. */
  private losses = 0;
  /** When the current stretch of hearing began (this process's clock). */
  private upSince: number;
  private readonly now: () => number;

  constructor(
    options: {
      /**
       * Whether stops are heard from the start: true for a runner without a channel (every stop
       * it must know comes through its own end/stopCalls); a worker starts deaf until subscribed.
       */
      hearing?: boolean;
      now?: () => number;
    } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.up = options.hearing ?? true;
    this.upSince = this.up ? Number.NEGATIVE_INFINITY : this.now();
  }

  /** Whether stops are heard right now. */
  get hearing(): boolean {
    return this.up;
  }

  /** The channel is gone (or not subscribed yet): stops announced from now on are missed. */
  lost(): void {
    if (this.up) this.losses += 1;
    this.up = false;
  }

  /** The channel is subscribed again: stops announced from now on are heard. */
  resumed(): void {
    if (this.up) return;
    this.up = true;
    this.upSince = this.now();
  }

  /** A mark of this moment, for heardSince; null when stops are not heard now. */
  mark(): number | null {
    return this.up ? this.losses : null;
  }

  /** Whether every stop announced since `mark` was taken has been heard. */
  heardSince(mark: number | null): boolean {
    return mark !== null && this.up && this.losses === mark;
  }

  /**
   * Whether every stop announced since the wall-clock time `at` (another process's clock, e.g.
   * when a gateway stored a message) has been heard: hearing without a break since `skewMs`
   * before it, the margin for the two clocks' difference.
   */
  heardSinceTime(at: number, skewMs: number): boolean {
    return this.up && this.upSince <= at - skewMs;
  }
}

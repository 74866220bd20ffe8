/**
 * A channel on which stops reach a process:
 * - `control`: the Redis control channel, on which the process that stopped a deliberation
 *   publishes a `cancel` after storing it (lost when that process, or this one, cannot reach Redis
 *   at that moment: a publish is not delayed, it is gone);
 * - `database`: PostgreSQL's `NOTIFY conclave_stops`, sent by the database itself in the very
 *   transaction that stores the stop (migration 1764710000000), so it announces every stop that
 *   commits, whoever stored it and whether or not that process could reach Redis.
 */
export type StopChannel = 'control' | 'database';

interface ChannelState {
  up: boolean;
  /** How many times the channel was lost: a mark is the count it was taken at. */
  losses: number;
  /** When the current stretch of hearing began (this process's clock). */
  upSince: number;
}

/**
 * How far back a process can be sure it heard the stops: whether the channel that announces every
 * stop has reached it without a break. A stop is stored first (the deliberation's status in
 * PostgreSQL) and announced on its channels; an announcement sent while a channel was down is lost.
 *
 * One channel decides (`decidedBy`): `database` when the process LISTENs on PostgreSQL (every stop
 * is announced there, in its own transaction), else `control` (a stop whose process could not reach
 * Redis is then missed: OPERATIONS.md "Stopping"). The other channel's breaks are recorded but do
 * not void what the deciding one heard: a stop is missed only when the deciding channel missed it.
 *
 * The stage runner starts a stage from state it holds in memory (the next stage its own commit
 * prepared, or the start a new conversation's job carries) only when no stop can have been missed
 * since that state was true: otherwise it loads the message, and finds the stored stop.
 */
export class StopHearing {
  private readonly channels: Record<StopChannel, ChannelState>;
  private readonly decider: StopChannel;
  private readonly now: () => number;

  constructor(
    options: {
      /**
       * Whether stops are heard from the start: true for a runner without a channel (every stop
       * it must know comes through its own end/stopCalls); a worker starts deaf until subscribed.
       */
      hearing?: boolean;
      /** The channel that announces every stop (default `control`). */
      decidedBy?: StopChannel;
      now?: () => number;
    } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.decider = options.decidedBy ?? 'control';
    const up = options.hearing ?? true;
    const state = (): ChannelState => ({
      up,
      losses: 0,
      upSince: up ? Number.NEGATIVE_INFINITY : this.now(),
    });
    this.channels = { control: state(), database: state() };
  }

  /** The channel whose hearing counts. */
  get decidedBy(): StopChannel {
    return this.decider;
  }

  /** Whether stops are heard right now (on the deciding channel). */
  get hearing(): boolean {
    return this.channels[this.decider].up;
  }

  /** Whether `channel` is up right now. */
  hears(channel: StopChannel): boolean {
    return this.channels[channel].up;
  }

  /** `channel` is gone (or not listening yet): stops announced on it from now on are missed. */
  lost(channel: StopChannel = 'control'): void {
    const state = this.channels[channel];
    if (state.up) state.losses += 1;
    state.up = false;
  }

  /** `channel` listens again: stops announced on it from now on are heard. */
  resumed(channel: StopChannel = 'control'): void {
    const state = this.channels[channel];
    if (state.up) return;
    state.up = true;
    state.upSince = this.now();
  }

  /** A mark of this moment, for heardSince; null when stops are not heard now. */
  mark(): number | null {
    const state = this.channels[this.decider];
    return state.up ? state.losses : null;
  }

  /** Whether every stop announced since `mark` was taken has been heard. */
  heardSince(mark: number | null): boolean {
    const state = this.channels[this.decider];
    return mark !== null && state.up && state.losses === mark;
  }

  /**
   * Whether every stop announced since the wall-clock time `at` (another process's clock, e.g.
   * when a gateway stored a message) has been heard: hearing without a break since `skewMs`
   * before it, the margin for the two clocks' difference.
   */
  heardSinceTime(at: number, skewMs: number): boolean {
    const state = this.channels[this.decider];
    return state.up && state.upSince <= at - skewMs;
  }
}

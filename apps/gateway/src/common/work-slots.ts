import { ApiError } from './api-error';
import { RateLimited } from './rate-limiter';

export interface WorkSlotsLimits {
  /** How many run at once on this gateway. */
  slots: number;
  /** How many of one owner's may wait; one more is refused with a 429. */
  perOwner: number;
  /** How many may wait in all; one more is refused with a 503. */
  total: number;
  /** What is computed, in the plural ("batch reports"), for the refusals. */
  what: string;
  /** The settings that set `perOwner` and `total`, named in the refusals. */
  perOwnerSetting: string;
  totalSetting: string;
}

/** The longest Retry-After a refusal names, whatever the recent durations. */
const MAX_RETRY_AFTER_SECONDS = 60;

interface Owner {
  waiting: (() => void)[];
  running: number;
  /** When this owner's work last started (a count of starts); 0 if none has while it was known. */
  lastServed: number;
}

/**
 * Runs heavy work a few at a time per gateway (batch reports: ~150 MB of transient memory each at
 * 10 000 items), fairly across owners (users): each owner's work waits in a queue of its own, in
 * arrival order, and a freed slot goes to the waiting owner served least recently, so an owner
 * waits behind their own work and at most one turn of each other owner's, never behind another's
 * flood. Past `perOwner` waiting an owner is refused with a 429, past `total` waiting everyone
 * with a 503, both with a Retry-After, so a client retries instead of piling up memory.
 */
export class WorkSlots {
  private running = 0;
  private waitingCount = 0;
  private starts = 0;
  /** Owners with work running or waiting (in the order they came: ties go to the earlier). */
  private readonly owners = new Map<string, Owner>();
  /** Recent durations (moving average) for Retry-After. */
  private averageMs = 1_000;

  constructor(private readonly limits: WorkSlotsLimits) {}

  async run<T>(ownerId: string, work: () => Promise<T>): Promise<T> {
    let owner = this.owners.get(ownerId);
    if (this.running >= this.limits.slots) {
      const waiting = owner?.waiting.length ?? 0;
      if (waiting >= this.limits.perOwner) {
        const retryAfter = this.retryAfterSeconds(waiting + 1);
        throw new RateLimited(
          `Too many of your ${this.limits.what} are waiting on this server: at most ${this.limits.perOwner} ` +
            `at a time besides the running ones (${this.limits.perOwnerSetting}); try again in ${retryAfter} s`,
          retryAfter,
        );
      }
      if (this.waitingCount >= this.limits.total) {
        throw new ApiError(
          503,
          `Too many ${this.limits.what} are waiting on this server right now: at most ${this.limits.total} ` +
            `(${this.limits.totalSetting}); retry in a few seconds.`,
        );
      }
      owner ??= this.known(ownerId);
      this.waitingCount += 1;
      const queue = owner.waiting;
      // handOver counts the start (running passes on, it does not change).
      await new Promise<void>((resolve) => queue.push(resolve));
    } else {
      owner ??= this.known(ownerId);
      this.running += 1;
      this.started(owner);
    }
    const started = Date.now();
    try {
      return await work();
    } finally {
      this.averageMs = 0.8 * this.averageMs + 0.2 * (Date.now() - started);
      owner.running -= 1;
      this.forgetIfIdle(ownerId, owner);
      this.handOver();
    }
  }

  private known(ownerId: string): Owner {
    const owner: Owner = { waiting: [], running: 0, lastServed: 0 };
    this.owners.set(ownerId, owner);
    return owner;
  }

  private started(owner: Owner): void {
    owner.running += 1;
    owner.lastServed = ++this.starts;
  }

  private forgetIfIdle(ownerId: string, owner: Owner): void {
    if (owner.running === 0 && owner.waiting.length === 0) this.owners.delete(ownerId);
  }

  /** Passes a freed slot straight to the waiting owner served least recently, or frees it. */
  private handOver(): void {
    let next: Owner | undefined;
    for (const owner of this.owners.values()) {
      if (owner.waiting.length > 0 && (next === undefined || owner.lastServed < next.lastServed))
        next = owner;
    }
    if (next === undefined) {
      this.running -= 1;
      return;
    }
    const resume = next.waiting.shift() as () => void;
    this.waitingCount -= 1;
    this.started(next);
    resume();
  }

  private retryAfterSeconds(ahead: number): number {
    const seconds = Math.ceil((this.averageMs * ahead) / this.limits.slots / 1000);
    return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, seconds));
  }

  get busy(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waitingCount };
  }

  /** How many of one owner's wait. */
  waitingOf(ownerId: string): number {
    return this.owners.get(ownerId)?.waiting.length ?? 0;
  }
}

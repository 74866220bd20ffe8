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

/**
 * Runs heavy work a few at a time per gateway (batch reports: ~150 MB of transient memory each at
 * 10 000 items), fairly across owners (users): each owner's work waits in a queue of its own, in
 * arrival order, and a freed slot goes to the next owner in turn (round robin), so an owner waits
 * behind their own work and at most one piece of everyone else's, never behind another's flood.
 * Past `perOwner` waiting an owner is refused with a 429, past `total` waiting everyone with a
 * 503, both with a Retry-After, so a client retries instead of piling up memory.
 */
export class WorkSlots {
  private running = 0;
  private waitingCount = 0;
  private readonly queues = new Map<string, (() => void)[]>();
  /** Owners with work waiting, in the order they are served; each appears once. */
  private readonly turns: string[] = [];
  /** Recent durations (moving average) for Retry-After. */
  private averageMs = 1_000;

  constructor(private readonly limits: WorkSlotsLimits) {}

  async run<T>(owner: string, work: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.slots) {
      const queue = this.queues.get(owner) ?? [];
      if (queue.length >= this.limits.perOwner) {
        const retryAfter = this.retryAfterSeconds(queue.length + 1);
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
      if (queue.length === 0) {
        this.queues.set(owner, queue);
        this.turns.push(owner);
      }
      this.waitingCount += 1;
      await new Promise<void>((resolve) => queue.push(resolve));
    } else {
      this.running += 1;
    }
    const started = Date.now();
    try {
      return await work();
    } finally {
      this.averageMs = 0.8 * this.averageMs + 0.2 * (Date.now() - started);
      this.handOver();
    }
  }

  /** Passes a freed slot straight to the next owner in turn (running stays the same), or frees it. */
  private handOver(): void {
    const owner = this.turns.shift();
    if (owner === undefined) {
      this.running -= 1;
      return;
    }
    const queue = this.queues.get(owner) as (() => void)[];
    const next = queue.shift() as () => void;
    if (queue.length > 0) this.turns.push(owner);
    else this.queues.delete(owner);
    this.waitingCount -= 1;
    next();
  }

  private retryAfterSeconds(ahead: number): number {
    const seconds = Math.ceil((this.averageMs * ahead) / this.limits.slots / 1000);
    return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, seconds));
  }

  get busy(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waitingCount };
  }

  /** How many of one owner's wait. */
  waitingOf(owner: string): number {
    return this.queues.get(owner)?.length ?? 0;
  }
}

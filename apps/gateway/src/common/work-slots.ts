import { ApiError } from './api-error';

/**
 * Runs heavy work a few at a time per gateway (batch reports: ~150 MB of transient memory each at
 * 10 000 items), queueing the rest in arrival order; past `maxWaiting` queued, refuses with 503 so
 * a client retries instead of piling up memory.
 */
export class WorkSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly slots: number,
    private readonly maxWaiting: number,
    private readonly what: string,
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) {
      if (this.waiting.length >= this.maxWaiting) {
        throw new ApiError(
          503,
          `Too many ${this.what} are being computed on this server right now; retry in a few seconds.`,
        );
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next in line (running stays the same).
      if (next) next();
      else this.running -= 1;
    }
  }

  get busy(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}

import type { CallOutcome } from './types';

/**
 * How a stage keeps model answers through a storage outage: a write of settled calls that fails
 * because the store cannot be reached is tried again (the write, not the call) for up to
 * `maxWaitMs`, while the answers wait in memory, at most `held`'s bytes of them per process.
 */
export interface StoreRetry {
  /** The store could not be reached (worth waiting for), as opposed to a bug or a refused write. */
  isUnavailable: (error: unknown) => boolean;
  /** How long one write is tried again before the stage gives up (its job then runs again later). */
  maxWaitMs: number;
  /** The answers this process holds while their writes wait. */
  held: HeldOutcomes;
  /** Waits between attempts; a timer unless a test replaces it. */
  sleep?: (ms: number) => Promise<void>;
}

/** Roughly what an outcome takes in memory: its text twice over (UTF-16) and its fields. */
export function outcomeBytes(outcome: CallOutcome): number {
  const text = outcome.ok ? outcome.content.length : outcome.error.length;
  return 2 * (text + outcome.key.length + outcome.model.length) + 256;
}

/**
 * The answers of one process that wait to be stored, in bytes. Every write of settled calls holds
 * its outcomes here until it ends; while the total is over `maxBytes` no write waits for storage
 * (it fails at once, as without StoreRetry), so an outage cannot grow a worker's memory without end.
 */
export class HeldOutcomes {
  private total = 0;
  private count = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.total;
  }

  /** Outcomes held now. */
  get outcomes(): number {
    return this.count;
  }

  /** True while the held answers take more than the bound: writes fail instead of waiting. */
  get full(): boolean {
    return this.total > this.maxBytes;
  }

  /** Holds `outcomes`; the function returned lets them go (once, however often it is called). */
  hold(outcomes: readonly CallOutcome[]): () => void {
    const bytes = outcomes.reduce((sum, outcome) => sum + outcomeBytes(outcome), 0);
    this.total += bytes;
    this.count += outcomes.length;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= bytes;
      this.count -= outcomes.length;
    };
  }
}

/** The first wait between attempts, and the longest (each wait doubles the one before). */
const FIRST_WAIT_MS = 100;
const LONGEST_WAIT_MS = 2000;

/**
 * Runs `write`, and while it fails because the store is unavailable, runs it again after a growing
 * wait: for at most `maxWaitMs` after the first failure, and only while `canWait()` says so (the
 * held answers fit their bound). Any other error, or the last unavailable one once waiting stops,
 * is thrown. `failed` is the first unavailable error met (null when the first attempt succeeded):
 * a write that failed that way may still have been applied before the connection went.
 */
export async function writeThroughOutage<T>(
  write: () => Promise<T>,
  options: {
    isUnavailable: (error: unknown) => boolean;
    maxWaitMs: number;
    canWait: () => boolean;
    now?: () => number;
    sleep?: (ms: number) => Promise<void>;
    /** Told of each failed attempt that is tried again, and how long until then. */
    onWait?: (error: unknown, attempt: number, waitMs: number) => void;
  },
): Promise<{ value: T; failed: unknown }> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let failed: unknown = null;
  let since = 0;
  let wait = FIRST_WAIT_MS;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return { value: await write(), failed };
    } catch (error) {
      if (!options.isUnavailable(error)) throw error;
      if (failed === null) {
        failed = error;
        since = now();
      }
      const left = options.maxWaitMs - (now() - since);
      if (left <= 0 || !options.canWait()) throw error;
      const waitMs = Math.min(wait, left);
      options.onWait?.(error, attempt, waitMs);
      await sleep(waitMs);
      wait = Math.min(wait * 2, LONGEST_WAIT_MS);
    }
  }
}

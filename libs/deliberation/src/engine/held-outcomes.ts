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
  /** The most one attempt is given (15 s unless a test sets it; see writeThroughOutage). */
  attemptMs?: number;
}

/** Roughly what an outcome takes in memory: its text twice over (UTF-16) and its fields. */
export function outcomeBytes(outcome: CallOutcome): number {
  const text = outcome.ok ? outcome.content.length : outcome.error.length;
  return 2 * (text + outcome.key.length + outcome.model.length) + 256;
}

/**
 * The answers of one process that wait to be stored, in bytes. Each write of settled calls is
 * weighed once, when it is taken on: it waits for storage only if it fits under `maxBytes` with
 * what is held already, and is then held until it ends; one that does not fit is not held and does
 * not wait (it fails at once when storage is away, as without StoreRetry). So an outage cannot grow
 * a worker's memory without end, and a write that does not fit fails alone: the writes already
 * held go on waiting.
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

  /**
   * Takes on `outcomes`: `waits` says whether they fit (then they are held until `release`, which
   * lets them go once however often it is called); a write of them that does not fit does not wait.
   */
  hold(outcomes: readonly CallOutcome[]): { waits: boolean; release: () => void } {
    const bytes = outcomes.reduce((sum, outcome) => sum + outcomeBytes(outcome), 0);
    if (this.total + bytes > this.maxBytes) return { waits: false, release: () => undefined };
    this.total += bytes;
    this.count += outcomes.length;
    let released = false;
    return {
      waits: true,
      release: () => {
        if (released) return;
        released = true;
        this.total -= bytes;
        this.count -= outcomes.length;
      },
    };
  }
}

/** The first wait between attempts, and the longest (each wait doubles the one before). */
const FIRST_WAIT_MS = 100;
const LONGEST_WAIT_MS = 2000;
/** The least time one attempt is given, however little of the hold is left, and the most. */
const SHORTEST_ATTEMPT_MS = 1000;
const LONGEST_ATTEMPT_MS = 15_000;

/**
 * An attempt that had not answered when the time left to wait ran out (a connection that hangs,
 * as on a network partition, rather than one refused). Counts as the store being unavailable; the
 * write may still be applied later, like one whose reply was lost.
 */
export class StoreAttemptTimedOut extends Error {
  constructor(ms: number) {
    super(`storage did not answer within ${ms} ms`);
    this.name = 'StoreAttemptTimedOut';
  }
}

/** `promise`, or StoreAttemptTimedOut once `ms` have passed without it settling. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreAttemptTimedOut(ms)), ms);
    timer.unref?.();
  });
  // A late failure of an attempt given up is nobody's to handle.
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs `write`, and while it fails because the store is unavailable, runs it again after a growing
 * wait: for at most `maxWaitMs` from the first attempt that failed, and only when `canWait` (the
 * held answers fitted their bound when the write was taken on). Each attempt is given the time
 * left to wait, at least a second and at most `attemptMs` (15 s): one that hangs (a network
 * partition) fails as unavailable then and is tried again, instead of holding the stage past its
 * wait (with `maxWaitMs` 0 attempts are bounded only by the pool's timeouts). Any other error, or
 * the last unavailable one once waiting stops, is thrown. `failed` is the first unavailable error
 * met (null when the first attempt succeeded): a write that failed that way may still have been
 * applied before the connection went.
 */
export async function writeThroughOutage<T>(
  write: () => Promise<T>,
  options: {
    isUnavailable: (error: unknown) => boolean;
    maxWaitMs: number;
    canWait: boolean;
    now?: () => number;
    sleep?: (ms: number) => Promise<void>;
    /** The most one attempt is given (LONGEST_ATTEMPT_MS unless a test sets it). */
    attemptMs?: number;
    /** Told of each failed attempt that is tried again, and how long until then. */
    onWait?: (error: unknown, attempt: number, waitMs: number) => void;
  },
): Promise<{ value: T; failed: unknown }> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const unavailable = (error: unknown) =>
    error instanceof StoreAttemptTimedOut || options.isUnavailable(error);
  let failed: unknown = null;
  let since = 0;
  let wait = FIRST_WAIT_MS;
  for (let attempt = 1; ; attempt += 1) {
    const startedAt = now();
    try {
      const left = failed === null ? options.maxWaitMs : options.maxWaitMs - (startedAt - since);
      const value =
        options.maxWaitMs > 0
          ? await within(
              write(),
              Math.max(Math.min(left, options.attemptMs ?? LONGEST_ATTEMPT_MS), SHORTEST_ATTEMPT_MS),
            )
          : await write();
      return { value, failed };
    } catch (error) {
      if (!unavailable(error)) throw error;
      if (failed === null) {
        failed = error;
        since = startedAt;
      }
      const left = options.maxWaitMs - (now() - since);
      if (left <= 0 || !options.canWait) throw error;
      const waitMs = Math.min(wait, left);
      options.onWait?.(error, attempt, waitMs);
      await sleep(waitMs);
      wait = Math.min(wait * 2, LONGEST_WAIT_MS);
    }
  }
}

import { HeldOutcomes, StoreAttemptTimedOut, outcomeBytes, writeThroughOutage } from './held-outcomes';
import type { CallOutcome } from './types';
import { simulatedReply } from '../../../../test/support/replies';

const answer = (key: string, content: string): CallOutcome =>
  simulatedReply(key, content, { model: 'sim/a', finishReason: null });

class Unavailable extends Error {
  readonly code = 'ECONNREFUSED';
}
const isUnavailable = (error: unknown) => error instanceof Unavailable;

describe('HeldOutcomes', () => {
  it('counts what it holds, lets it go once, and takes on only what fits its bound', () => {
    const a = answer('a', 'x'.repeat(1000));
    const b = answer('b', 'y'.repeat(1000));
    const held = new HeldOutcomes(outcomeBytes(a) + outcomeBytes(b));
    const heldA = held.hold([a]);
    const heldB = held.hold([b]);
    expect({ a: heldA.waits, b: heldB.waits, bytes: held.bytes, outcomes: held.outcomes }).toEqual({
      a: true,
      b: true,
      bytes: outcomeBytes(a) + outcomeBytes(b),
      outcomes: 2,
    });
    // Over the bound: not held, does not wait; what is held stays so.
    const heldC = held.hold([answer('c', 'z')]);
    expect({ c: heldC.waits, bytes: held.bytes }).toEqual({
      c: false,
      bytes: outcomeBytes(a) + outcomeBytes(b),
    });
    heldC.release();
    heldA.release();
    heldA.release();
    expect(held.bytes).toBe(outcomeBytes(b));
    // Room again: taken on.
    expect(held.hold([answer('d', 'z')]).waits).toBe(true);
    heldB.release();
    expect(held.outcomes).toBe(1);
  });

  it('weighs an answer by its text', () => {
    expect(outcomeBytes(answer('a', 'x'.repeat(10_000)))).toBeGreaterThan(20_000);
    expect(
      outcomeBytes({ ok: false, key: 'a', model: 'sim/a', error: 'timed out', responseTimeMs: 1 }),
    ).toBeLessThan(400);
  });
});

describe('writeThroughOutage', () => {
  /** A clock that moves only when the retry sleeps. */
  const clock = () => {
    let t = 0;
    const waits: number[] = [];
    return {
      now: () => t,
      sleep: (ms: number) => {
        waits.push(ms);
        t += ms;
        return Promise.resolve();
      },
      waits,
    };
  };

  it('writes again while the store is away, with growing waits, and says the write met the outage', async () => {
    const time = clock();
    let attempts = 0;
    const result = await writeThroughOutage(
      () => {
        attempts += 1;
        return attempts < 6 ? Promise.reject(new Unavailable('down')) : Promise.resolve('stored');
      },
      { isUnavailable, maxWaitMs: 60_000, canWait: true, ...time },
    );
    expect(result.value).toBe('stored');
    expect(result.failed).toBeInstanceOf(Unavailable);
    expect(time.waits).toEqual([100, 200, 400, 800, 1600]);
  });

  it('reports no failure when the first attempt goes through', async () => {
    const result = await writeThroughOutage(() => Promise.resolve(1), {
      isUnavailable,
      maxWaitMs: 1000,
      canWait: true,
    });
    expect(result).toEqual({ value: 1, failed: null });
  });

  it('gives up after maxWaitMs with the storage error', async () => {
    const time = clock();
    const error = new Unavailable('still down');
    await expect(
      writeThroughOutage(() => Promise.reject(error), {
        isUnavailable,
        maxWaitMs: 5000,
        canWait: true,
        ...time,
      }),
    ).rejects.toBe(error);
    expect(time.waits.reduce((a, b) => a + b, 0)).toBe(5000);
    expect(Math.max(...time.waits)).toBeLessThanOrEqual(2000);
  });

  it('does not wait for a write whose answers did not fit the bound', async () => {
    const time = clock();
    const held = new HeldOutcomes(100);
    const { waits } = held.hold([answer('a', 'x'.repeat(1000))]);
    const error = new Unavailable('down');
    let attempts = 0;
    await expect(
      writeThroughOutage(
        () => {
          attempts += 1;
          return Promise.reject(error);
        },
        { isUnavailable, maxWaitMs: 60_000, canWait: waits, ...time },
      ),
    ).rejects.toBe(error);
    expect({ attempts, waits: time.waits }).toEqual({ attempts: 1, waits: [] });
  });

  it('a write taken on within the bound goes on waiting when a later one goes over it', async () => {
    const time = clock();
    const a = answer('a', 'x'.repeat(1000));
    const held = new HeldOutcomes(outcomeBytes(a));
    const first = held.hold([a]);
    let attempts = 0;
    const writing = writeThroughOutage(
      () => {
        attempts += 1;
        // The second group comes while the first waits: it does not fit.
        if (attempts === 2) expect(held.hold([answer('b', 'y'.repeat(1000))]).waits).toBe(false);
        return attempts < 5 ? Promise.reject(new Unavailable('down')) : Promise.resolve('stored');
      },
      { isUnavailable, maxWaitMs: 60_000, canWait: first.waits, ...time },
    );
    await expect(writing).resolves.toMatchObject({ value: 'stored' });
    expect(attempts).toBe(5);
  });

  it('gives up on an attempt that hangs once the time to wait is over', async () => {
    await expect(
      writeThroughOutage(() => new Promise<never>(() => undefined), {
        isUnavailable,
        maxWaitMs: 200,
        canWait: true,
        sleep: () => Promise.resolve(),
      }),
    ).rejects.toBeInstanceOf(StoreAttemptTimedOut);
  });

  it('tries again after an attempt that hung, as after a refused one', async () => {
    let attempts = 0;
    const result = await writeThroughOutage(
      () => {
        attempts += 1;
        return attempts === 1 ? new Promise<string>(() => undefined) : Promise.resolve('stored');
      },
      { isUnavailable, maxWaitMs: 60_000, canWait: true, attemptMs: 1000, sleep: () => Promise.resolve() },
    );
    expect(result.value).toBe('stored');
    expect(result.failed).toBeInstanceOf(StoreAttemptTimedOut);
  });

  it('never retries an error that is not the store being away', async () => {
    const time = clock();
    const error = new Error('a refused value');
    let attempts = 0;
    await expect(
      writeThroughOutage(
        () => {
          attempts += 1;
          return Promise.reject(error);
        },
        { isUnavailable, maxWaitMs: 60_000, canWait: true, ...time },
      ),
    ).rejects.toBe(error);
    expect(attempts).toBe(1);
  });
});

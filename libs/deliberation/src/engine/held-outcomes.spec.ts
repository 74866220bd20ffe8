import { HeldOutcomes, outcomeBytes, writeThroughOutage } from './held-outcomes';
import type { CallOutcome } from './types';
import { simulatedReply } from '../../../../test/support/replies';

const answer = (key: string, content: string): CallOutcome =>
  simulatedReply(key, content, { model: 'sim/a', finishReason: null });

class Unavailable extends Error {
  readonly code = 'ECONNREFUSED';
}
const isUnavailable = (error: unknown) => error instanceof Unavailable;

describe('HeldOutcomes', () => {
  it('counts what it holds, lets it go once, and is full only over its bound', () => {
    const a = answer('a', 'x'.repeat(1000));
    const b = answer('b', 'y'.repeat(1000));
    const held = new HeldOutcomes(outcomeBytes(a) + outcomeBytes(b));
    const releaseA = held.hold([a]);
    const releaseB = held.hold([b]);
    expect({ bytes: held.bytes, outcomes: held.outcomes, full: held.full }).toEqual({
      bytes: outcomeBytes(a) + outcomeBytes(b),
      outcomes: 2,
      full: false,
    });
    const releaseC = held.hold([answer('c', 'z')]);
    expect(held.full).toBe(true);
    releaseC();
    releaseC();
    expect(held.full).toBe(false);
    releaseA();
    releaseB();
    expect({ bytes: held.bytes, outcomes: held.outcomes }).toEqual({ bytes: 0, outcomes: 0 });
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
      { isUnavailable, maxWaitMs: 60_000, canWait: () => true, ...time },
    );
    expect(result.value).toBe('stored');
    expect(result.failed).toBeInstanceOf(Unavailable);
    expect(time.waits).toEqual([100, 200, 400, 800, 1600]);
  });

  it('reports no failure when the first attempt goes through', async () => {
    const result = await writeThroughOutage(() => Promise.resolve(1), {
      isUnavailable,
      maxWaitMs: 1000,
      canWait: () => true,
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
        canWait: () => true,
        ...time,
      }),
    ).rejects.toBe(error);
    expect(time.waits.reduce((a, b) => a + b, 0)).toBe(5000);
    expect(Math.max(...time.waits)).toBeLessThanOrEqual(2000);
  });

  it('does not wait once the held answers are over their bound', async () => {
    const time = clock();
    const held = new HeldOutcomes(100);
    held.hold([answer('a', 'x'.repeat(1000))]);
    const error = new Unavailable('down');
    let attempts = 0;
    await expect(
      writeThroughOutage(
        () => {
          attempts += 1;
          return Promise.reject(error);
        },
        { isUnavailable, maxWaitMs: 60_000, canWait: () => !held.full, ...time },
      ),
    ).rejects.toBe(error);
    expect({ attempts, waits: time.waits }).toEqual({ attempts: 1, waits: [] });
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
        { isUnavailable, maxWaitMs: 60_000, canWait: () => true, ...time },
      ),
    ).rejects.toBe(error);
    expect(attempts).toBe(1);
  });
});

import type { ConclaveConfig } from '@conclave/config';
import type { LiveCalls, ResumeOptions, Resumer, StageRunner } from '@conclave/deliberation';
import type { Logger } from '@conclave/observability';
import type { BatchDispatcher } from '@conclave/persistence';
import type { QueueWatch, RedisClient } from '@conclave/redis';
import { ActiveStages } from './active-stages';
import { Recovery } from './recovery';

const HEARTBEAT_MS = 1000;
/** Recovery's settle time for this heartbeat: two heartbeats and 2.5 s. */
const SETTLE_MS = 2 * HEARTBEAT_MS + 2500;

/**
 * A Recovery over fakes: `lose(epoch)` makes the next heartbeat find the queue's epoch gone;
 * `passes` lists the resumptions (when, with which tag); `hold()` keeps the next one running until
 * released.
 */
function recoveryOverFakes() {
  let nextLoss: string | null = null;
  const passes: { at: number; tag: string }[] = [];
  let held: Promise<void> | null = null;
  const watch = {
    beat: async () => {
      const lost = nextLoss;
      nextLoss = null;
      return { lost };
    },
    running: async () => new Set<string>(),
    leave: async () => undefined,
  };
  const resumer = {
    resumeLost: async (options: ResumeOptions) => {
      passes.push({ at: Date.now(), tag: options.tag });
      if (held) await held;
      return 0;
    },
  };
  const recovery = new Recovery(
    watch as unknown as QueueWatch,
    resumer as unknown as Resumer,
    {} as StageRunner,
    { reconcile: async () => undefined } as unknown as BatchDispatcher,
    new ActiveStages(),
    { onTracked: () => undefined, inFlightCalls: () => [] } as unknown as LiveCalls,
    { on: () => undefined, off: () => undefined } as unknown as RedisClient,
    { worker: { heartbeatMs: HEARTBEAT_MS } } as ConclaveConfig,
    { warn: () => undefined, info: () => undefined } as unknown as Logger,
  );
  return {
    recovery,
    passes,
    lose: (epoch: string) => {
      nextLoss = epoch;
    },
    hold: () => {
      let release: () => void = () => undefined;
      held = new Promise<void>((resolve) => (release = resolve));
      return () => {
        held = null;
        release();
      };
    },
  };
}

describe('Recovery (heartbeat) when Redis loses the queue again while a loss is being resumed', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('a loss noticed while waiting to resume an earlier one is resumed, once settled after it', async () => {
    const { recovery, passes, lose } = recoveryOverFakes();
    lose('at-start'); // a worker that starts on an empty Redis: its first heartbeat finds no epoch
    recovery.start();
    await jest.advanceTimersByTimeAsync(1500);
    lose('flushed'); // Redis emptied again, 2 s later (the heartbeat at 2 s notices it)
    await jest.advanceTimersByTimeAsync(HEARTBEAT_MS);
    const lostAt = 1_000_000 + 2 * HEARTBEAT_MS;

    // Not at the first loss's settle time (the leases lost with the second are not back yet)…
    await jest.advanceTimersByTimeAsync(SETTLE_MS - 2 * HEARTBEAT_MS);
    expect(passes).toEqual([]);
    // …but settled after the second, with its epoch, once.
    await jest.advanceTimersByTimeAsync(2 * HEARTBEAT_MS + 100);
    expect(passes).toEqual([{ at: lostAt + SETTLE_MS, tag: 'flushed' }]);
    await jest.advanceTimersByTimeAsync(4 * SETTLE_MS);
    expect(passes).toHaveLength(1);
    await recovery.stop();
  });

  it('a loss noticed while a resumption runs gets a pass of its own after that one', async () => {
    const { recovery, passes, lose, hold } = recoveryOverFakes();
    recovery.start();
    await jest.advanceTimersByTimeAsync(500);
    lose('first');
    await jest.advanceTimersByTimeAsync(HEARTBEAT_MS); // noticed at 1 s
    const release = hold(); // the pass takes long (many deliberations to look at)
    await jest.advanceTimersByTimeAsync(SETTLE_MS);
    expect(passes.map((p) => p.tag)).toEqual(['first']);

    lose('second'); // noticed at the next heartbeat, while that pass still runs
    await jest.advanceTimersByTimeAsync(HEARTBEAT_MS);
    const secondAt = Date.now() - (Date.now() % HEARTBEAT_MS);
    release();
    await jest.advanceTimersByTimeAsync(SETTLE_MS + HEARTBEAT_MS);
    expect(passes.map((p) => p.tag)).toEqual(['first', 'second']);
    expect(passes[1].at).toBeGreaterThanOrEqual(secondAt + SETTLE_MS);
    await recovery.stop();
  });
});

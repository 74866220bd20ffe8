import { randomBytes, randomUUID } from 'node:crypto';
import IORedis, { type Redis } from 'ioredis';
import {
  GraceDeadlines,
  GraceKeeper,
  graceExpiredReason,
  graceMember,
  graceTiming,
  parseGraceMember,
  retryGraceKey,
  type GraceRun,
  type GraceTiming,
} from './retry-grace';
import { sleep } from '../../../../test/support/wait';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
describe('the /v1 retry grace: timing and members', () => {
  it('renews a quarter of the grace apart (250 ms to 5 s), three renewals ahead; 0 is off', () => {
    expect(graceTiming(0)).toBeNull();
    expect(graceTiming(120_000)).toEqual({ graceMs: 120_000, tickMs: 5_000, leaseMs: 15_000 });
    expect(graceTiming(8_000)).toEqual({ graceMs: 8_000, tickMs: 2_000, leaseMs: 6_000 });
    expect(graceTiming(1_000)).toEqual({ graceMs: 1_000, tickMs: 250, leaseMs: 750 });
    // Whatever the grace, a renewal comes well before a time set on a detach falls due.
    for (const grace of [1_000, 1_500, 20_000, 120_000, 3_600_000]) {
      const timing = graceTiming(grace) as GraceTiming;
      expect(timing.tickMs).toBeLessThanOrEqual(grace / 4);
    }
  });

  it('names a run by its owner and message, and reads back only what it wrote', () => {
    const run = { userId: randomUUID(), messageId: randomUUID() };
    expect(parseGraceMember(graceMember(run))).toEqual(run);
    for (const foreign of ['', 'x', '[]', '["a"]', '["a",2]', '["","m"]', '{"userId":"a","messageId":"b"}']) {
      expect(parseGraceMember(foreign)).toBeNull();
    }
    expect(retryGraceKey('conclave')).toBe('conclave:v1-retry:deadlines');
  });

  it('says why a run was cancelled, naming the setting', () => {
    expect(graceExpiredReason(120_000)).toBe(
      'Its client went away and no retry with the same Idempotency-Key came within 120 seconds (V1_RETRY_GRACE_MS).',
    );
    expect(graceExpiredReason(1_500)).toContain('within 1.5 seconds');
    expect(graceExpiredReason(1_000)).toContain('within 1 second (');
  });
});

describe('the /v1 retry grace on a real Redis (two connections as two gateways)', () => {
  const prefix = `t-grace-${randomBytes(5).toString('hex')}`;
  const connections: Redis[] = [];
  const TIMING: GraceTiming = { graceMs: 600, tickMs: 100, leaseMs: 300 };

  const connection = () => {
    const redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
    connections.push(redis);
    return redis;
  };
  const run = (): GraceRun => ({ userId: randomUUID(), messageId: randomUUID() });

  /** A gateway's keeper, recording the cancels it makes. */
  function gateway(cancel?: (run: GraceRun, reason: string | null) => Promise<void>) {
    const deadlines = new GraceDeadlines(connection(), prefix);
    const cancels: { run: GraceRun; reason: string | null }[] = [];
    const warnings: string[] = [];
    const keeper = new GraceKeeper({
      deadlines,
      timing: TIMING,
      cancel: async (target, reason) => {
        await cancel?.(target, reason);
        cancels.push({ run: target, reason });
      },
      warn: (message) => warnings.push(message),
    });
    return { keeper, deadlines, cancels, warnings };
  }
  /** Ticks the keepers every `TIMING.tickMs` for `ms`. */
  async function tickFor(ms: number, ...keepers: GraceKeeper[]) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      await Promise.all(keepers.map((k) => k.tick()));
      await sleep(TIMING.tickMs);
    }
  }
  const settled = () => sleep(50);

  afterAll(async () => {
    const redis = new IORedis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await Promise.all(connections.map((c) => c.quit().catch(() => undefined)));
  });

  it('moves a time later on a renewal, to exactly the given time on a set, and hands each due member to one caller', async () => {
    const a = new GraceDeadlines(connection(), prefix);
    const b = new GraceDeadlines(connection(), prefix);
    const member = graceMember(run());
    await a.postpone([member], 10_000);
    const later = (await a.dueAt(member)) as number;
    await a.postpone([member], 1_000);
    expect(await a.dueAt(member)).toBe(later);
    await a.set([member], -1);
    expect((await a.dueAt(member)) as number).toBeLessThan(later - 9_000);
    const others = Array.from({ length: 30 }, () => graceMember(run()));
    await b.set(others, -1);
    const [first, second] = await Promise.all([a.claimDue(1_000), b.claimDue(1_000)]);
    const claimed = [...first, ...second];
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed).toEqual(expect.arrayContaining([member, ...others]));
    expect(await a.dueAt(member)).toBeNull();
    expect(await a.claimDue(1_000)).toEqual([]);
  });

  it('cancels a run whose client went away once the grace has passed, and not before', async () => {
    const { keeper, deadlines, cancels } = gateway();
    const target = run();
    keeper.attach(target).detach();
    await settled();
    await tickFor(300, keeper);
    expect(cancels).toEqual([]);
    await tickFor(600, keeper);
    expect(cancels).toEqual([{ run: target, reason: graceExpiredReason(TIMING.graceMs) }]);
    expect(await deadlines.dueAt(graceMember(target))).toBeNull();
    expect(keeper.followedRuns).toBe(0);
  });

  it('a retry on another gateway within the grace keeps the run; its end forgets it', async () => {
    const first = gateway();
    const second = gateway();
    const target = run();
    first.keeper.attach(target).detach();
    await sleep(200);
    const retry = second.keeper.attach(target);
    await tickFor(1_000, first.keeper, second.keeper);
    expect([...first.cancels, ...second.cancels]).toEqual([]);
    retry.end();
    await settled();
    expect(await second.deadlines.dueAt(graceMember(target))).toBeNull();
    await tickFor(600, first.keeper, second.keeper);
    expect([...first.cancels, ...second.cancels]).toEqual([]);
  });

  it('a request still following on the same gateway keeps the run when another of its requests leaves', async () => {
    const { keeper, cancels } = gateway();
    const target = run();
    const staying = keeper.attach(target);
    keeper.attach(target).detach();
    await tickFor(900, keeper);
    expect(cancels).toEqual([]);
    staying.detach();
    staying.detach();
    await tickFor(900, keeper);
    expect(cancels).toHaveLength(1);
  });

  it('a gateway that dies while its client follows: another cancels the run after the lease and the grace', async () => {
    const dead = gateway();
    const alive = gateway();
    const target = run();
    dead.keeper.attach(target);
    await settled();
    // The dead gateway never ticks again and never hears of its client leaving.
    await tickFor(TIMING.graceMs + 100, alive.keeper);
    expect(alive.cancels).toEqual([]);
    await tickFor(TIMING.leaseMs + 200, alive.keeper);
    expect(alive.cancels).toEqual([{ run: target, reason: graceExpiredReason(TIMING.graceMs) }]);
  });

  it('a cancel that fails is tried again on a later tick', async () => {
    let failures = 2;
    const { keeper, cancels, warnings } = gateway(async () => {
      if (failures-- > 0) throw new Error('PostgreSQL is away');
    });
    const target = run();
    keeper.attach(target).detach();
    await tickFor(1_500, keeper);
    expect(cancels).toEqual([{ run: target, reason: graceExpiredReason(TIMING.graceMs) }]);
    expect(warnings.filter((w) => w.includes('PostgreSQL is away'))).toHaveLength(2);
  });

  it('a gateway that stops gives the runs its clients follow the grace from then, for a retry elsewhere', async () => {
    const stopping = gateway();
    const other = gateway();
    const target = run();
    const attachment = stopping.keeper.attach(target);
    await settled();
    await stopping.keeper.close();
    // Its requests' connections close as it stops: nothing more is written for them.
    attachment.detach();
    await tickFor(TIMING.graceMs - 200, other.keeper);
    expect(other.cancels).toEqual([]);
    await tickFor(500, other.keeper);
    expect(other.cancels).toHaveLength(1);
  });
});

import { randomBytes } from 'node:crypto';
import type { FleetLease, ProviderLimits } from '@conclave/llm';
import IORedis, { type Redis } from 'ioredis';
import { RedisFleetLimiter, type RedisFleetLimiterOptions } from './fleet-limiter';
import { sleep } from '../../../test/support/wait';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const never = () => new AbortController().signal;

describe('RedisFleetLimiter (real Redis, two connections as two workers)', () => {
  const prefix = `t-limits-${randomBytes(5).toString('hex')}`;
  const connections: Redis[] = [];
  const limiters: RedisFleetLimiter[] = [];
  let testNo = 0;
  let provider = '';

  /** Two workers: each its own connection and limiter, sharing the prefix. */
  function fleet(limits: ProviderLimits, options: RedisFleetLimiterOptions = {}): RedisFleetLimiter[] {
    return [0, 1].map(() => {
      const redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
      connections.push(redis);
      const limiter = new RedisFleetLimiter(redis, prefix, limits, options);
      limiters.push(limiter);
      return limiter;
    });
  }
  const only = (limit: ProviderLimits['providers'][string]): ProviderLimits => ({
    providers: { [provider]: limit },
    models: {},
  });

  beforeEach(() => {
    // A provider name of its own per test: no test sees another's slots or cool-downs.
    provider = `p${++testNo}`;
  });

  afterAll(async () => {
    for (const limiter of limiters) limiter.close();
    const redis = new IORedis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await Promise.all(connections.map((c) => c.quit().catch(() => undefined)));
  });

  it('never lets more than maxConcurrent calls run at once across the fleet', async () => {
    const [a, b] = fleet(only({ maxConcurrent: 2 }));
    let inFlight = 0;
    let maxInFlight = 0;
    const call = async (limiter: RedisFleetLimiter, i: number) => {
      const lease = await limiter.acquire({ provider, model: `m/${i}` }, never());
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await sleep(10 + (i % 4) * 5);
      inFlight--;
      await limiter.release(lease);
    };
    await Promise.all(Array.from({ length: 24 }, (_, i) => call(i % 2 === 0 ? a : b, i)));
    expect(maxInFlight).toBe(2);
    const redis = connections[0];
    expect(await redis.zcard(`${prefix}:limits:{${provider}}:concurrent`)).toBe(0);
  });

  it('holds the call after rpm starts in the window until the oldest leaves it', async () => {
    const [a, b] = fleet(only({ rpm: 5 }), { rpmWindowMs: 1000 });
    const started = Date.now();
    for (let i = 0; i < 5; i++) await (i % 2 ? a : b).acquire({ provider }, never());
    expect(Date.now() - started).toBeLessThan(500);
    // Concurrency is not limited here: releasing frees nothing for rpm.
    const sixth = b.acquire({ provider }, never()).then(() => Date.now() - started);
    await expect(sixth).resolves.toBeGreaterThanOrEqual(950);
  });

  it('counts rpm per real minute by default: the sixth call waits', async () => {
    const [a] = fleet(only({ rpm: 5 }));
    for (let i = 0; i < 5; i++) await a.acquire({ provider }, never());
    await expect(a.acquire({ provider }, AbortSignal.timeout(400))).rejects.toMatchObject({
      name: 'ModelCallError',
      kind: 'timeout',
    });
    const ttl = await connections[0].pttl(`${prefix}:limits:{${provider}}:rpm`);
    expect(ttl).toBeGreaterThan(55_000);
  });

  it('makes the whole fleet wait out a cool-down one worker was told about; never shortens it', async () => {
    const [a, b] = fleet(only({}));
    await a.penalize(provider, 800);
    await a.penalize(provider, 50); // a shorter one does not cut the running cool-down
    const started = Date.now();
    await b.acquire({ provider }, never());
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(700);
    expect(waited).toBeLessThan(1500);
    // Other providers are not affected.
    const other = Date.now();
    await b.acquire({ provider: `${provider}-other` }, never());
    expect(Date.now() - other).toBeLessThan(200);
  });

  it('frees the slot of a holder that died (no renewal, no release) after the lease TTL', async () => {
    const [a, b] = fleet(only({ maxConcurrent: 1 }), { leaseTtlMs: 600 });
    await a.acquire({ provider }, never());
    a.close(); // as if the worker were SIGKILLed mid-call
    const started = Date.now();
    await b.acquire({ provider }, never());
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(450);
    expect(waited).toBeLessThan(1500);
  });

  it('keeps a live holder’s lease by renewing it past the TTL', async () => {
    const [a, b] = fleet(only({ maxConcurrent: 1 }), { leaseTtlMs: 300 });
    const lease = await a.acquire({ provider }, never());
    await expect(b.acquire({ provider }, AbortSignal.timeout(1000))).rejects.toMatchObject({
      kind: 'timeout',
    });
    await a.release(lease);
    const started = Date.now();
    await b.acquire({ provider }, never());
    expect(Date.now() - started).toBeLessThan(400);
  });

  it('rejects a waiting acquire promptly when aborted, and admits nothing for it', async () => {
    const [a, b] = fleet(only({ maxConcurrent: 1 }));
    const held = await a.acquire({ provider }, never());
    const controller = new AbortController();
    const waiting = b.acquire({ provider }, controller.signal);
    await sleep(100);
    const aborted = Date.now();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'ModelCallError', kind: 'aborted' });
    expect(Date.now() - aborted).toBeLessThan(50);
    await a.release(held);
    await sleep(50);
    expect(await connections[0].zcard(`${prefix}:limits:{${provider}}:concurrent`)).toBe(0);
  });

  it('applies a model limit to that model only, and the provider limit to all of them', async () => {
    const limits: ProviderLimits = {
      providers: { [provider]: { maxConcurrent: 3 } },
      models: { 'vendor/slow': { maxConcurrent: 1 } },
    };
    const [a, b] = fleet(limits);
    const slow = await a.acquire({ provider, model: 'vendor/slow' }, never());
    await expect(
      b.acquire({ provider, model: 'vendor/slow' }, AbortSignal.timeout(300)),
    ).rejects.toMatchObject({ kind: 'timeout' });
    const leases: FleetLease[] = [];
    leases.push(await b.acquire({ provider, model: 'vendor/fast' }, never()));
    leases.push(await a.acquire({ provider, model: 'vendor/fast' }, never()));
    // Three in flight for the provider: a fourth waits even for an unlimited model.
    await expect(
      b.acquire({ provider, model: 'vendor/fast' }, AbortSignal.timeout(300)),
    ).rejects.toMatchObject({ kind: 'timeout' });
    await a.release(slow);
    leases.push(await b.acquire({ provider, model: 'vendor/slow' }, never()));
    await Promise.all(leases.map((lease, i) => (i % 2 ? a : b).release(lease)));
  });

  it('admits at once where no limit applies, checking only the cool-down', async () => {
    const [a] = fleet({ providers: {}, models: {} });
    const started = Date.now();
    const leases = await Promise.all(Array.from({ length: 20 }, () => a.acquire({ provider }, never())));
    expect(Date.now() - started).toBeLessThan(500);
    await Promise.all(leases.map((lease) => a.release(lease)));
    expect(await connections[0].keys(`${prefix}:limits:{${provider}}:*`)).toEqual([]);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { loadConfig } from '@conclave/config';
import type { BatchAccepted } from '@conclave/contracts';
import IORedis, { type Redis } from 'ioredis';
import { io } from 'socket.io-client';
import { ApiError } from '../apps/gateway/src/common/api-error';
import { RateLimited, RateLimiter, type RateBucket } from '../apps/gateway/src/common/rate-limiter';
import { TestStack } from './support/harness';
import { freePort } from './support/private-postgres';
import { sleep } from './support/wait';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** A whole number of minutes and hours since the epoch: fixed windows would start a new one here. */
const T0 = 1_800_000_000_000;
const MINUTE = 60_000;
const HOUR = 3_600_000;

/** What a promise settled with: `ok`, or the RateLimited / ApiError it threw. */
async function outcome(promise: Promise<void>): Promise<'ok' | RateLimited | ApiError> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof RateLimited || error instanceof ApiError) return error;
    throw error;
  }
}

const statusOf = (error: 'ok' | ApiError) => (error === 'ok' ? 'ok' : error.getStatus());

describe('limit settings', () => {
  it('defaults to budgets a 10 000-item batch fits in, and refuses malformed values by name', () => {
    const { abuse } = loadConfig({});
    expect(abuse).toMatchObject({ batchItemsPerHour: 20_000, authFailuresPerMinute: 30, trustProxyHops: 0 });
    expect(loadConfig({ RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '0' }).abuse.batchItemsPerHour).toBe(0);
    expect(() => loadConfig({ RATE_LIMIT_BATCH_ITEMS_PER_HOUR: 'lots' })).toThrow(
      /RATE_LIMIT_BATCH_ITEMS_PER_HOUR/,
    );
    expect(() => loadConfig({ AUTH_FAILURES_PER_MINUTE: '-1' })).toThrow(/AUTH_FAILURES_PER_MINUTE/);
    expect(() => loadConfig({ TRUST_PROXY_HOPS: 'true' })).toThrow(/TRUST_PROXY_HOPS must be an integer/);
  });
});

describe('RateLimiter on real Redis with an injected clock', () => {
  const prefix = `t-rl-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  const clock = { t: T0 };
  let serial = 0;

  /** A limiter as one gateway replica sees it; every limiter of a test shares Redis and the prefix. */
  const limiter = (env: Record<string, string>) =>
    new RateLimiter(loadConfig({ REDIS_PREFIX: prefix, ...env }), redis, { now: () => clock.t });
  const user = () => `user-${++serial}`;

  beforeAll(() => {
    redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('refuses a burst that straddles a minute boundary (a fixed window admitted twice the limit)', async () => {
    const [a, b] = [
      limiter({ RATE_LIMIT_REQUESTS_PER_MINUTE: '5' }),
      limiter({ RATE_LIMIT_REQUESTS_PER_MINUTE: '5' }),
    ];
    const id = user();
    // Ten requests from 59.0 s to 60.8 s, alternating between two replicas: half before the
    // minute turns, half after.
    const results: ('ok' | RateLimited | ApiError)[] = [];
    for (let i = 0; i < 10; i++) {
      clock.t = T0 + 59_000 + i * 200;
      results.push(await outcome((i % 2 ? b : a).take(id, 'requests')));
    }
    expect(results.map((r) => (r === 'ok' ? 'ok' : r.getStatus()))).toEqual([
      ...Array(5).fill('ok'),
      ...Array(5).fill(429),
    ]);
    // Retry-After is when the oldest of the five leaves the window: 59.0 s + 60 s = 119.0 s.
    const refused = results[9] as RateLimited;
    expect(refused.retryAfterSeconds).toBe(Math.ceil((T0 + 119_000 - clock.t) / 1000));
    expect(refused.message).toMatch(/at most 5 a minute/);
    clock.t = T0 + 118_999;
    expect(await outcome(a.take(id, 'requests'))).toMatchObject({ retryAfterSeconds: 1 });
    clock.t = T0 + 119_000;
    expect(await outcome(b.take(id, 'requests'))).toBe('ok');
    // The next slot frees when the second request (59.2 s) leaves the window.
    expect(await outcome(a.take(id, 'requests'))).toMatchObject({ retryAfterSeconds: 1 });
    clock.t = T0 + 119_200;
    expect(await outcome(a.take(id, 'requests'))).toBe('ok');
  });

  it('never admits more than the limit in any 60 s span, and Retry-After is exactly when a slot frees', async () => {
    const limit = 7;
    const a = limiter({ RATE_LIMIT_DELIBERATIONS_PER_MINUTE: String(limit) });
    const id = user();
    // A deterministic, bursty arrival pattern over six minutes.
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const admitted: number[] = [];
    const arrivals: number[] = [];
    let t = T0;
    for (let i = 0; i < 400; i++) {
      t += random() < 0.2 ? Math.floor(random() * 6000) : Math.floor(random() * 300);
      clock.t = t;
      arrivals.push(t);
      const result = await outcome(a.take(id, 'deliberations'));
      if (result === 'ok') {
        admitted.push(t);
        continue;
      }
      expect(result).toBeInstanceOf(RateLimited);
      // The slot frees when the oldest admission in the window leaves it.
      const inWindow = admitted.filter((at) => at > t - MINUTE);
      expect(inWindow).toHaveLength(limit);
      const freesAt = inWindow[0] + MINUTE;
      expect((result as RateLimited).retryAfterSeconds).toBe(Math.max(1, Math.ceil((freesAt - t) / 1000)));
    }
    for (const start of admitted) {
      expect(admitted.filter((at) => at >= start && at < start + MINUTE).length).toBeLessThanOrEqual(limit);
    }
    // And nothing is refused that fits: exactly what a sliding log admits.
    const reference: number[] = [];
    for (const at of arrivals)
      if (reference.filter((r) => r > at - MINUTE).length < limit) reference.push(at);
    expect(admitted).toEqual(reference);
    expect(admitted.length).toBeGreaterThan(limit * 3);
  });

  it('takes a batch of N items as N from the batch-item budget, and says when the batch fits', async () => {
    const a = limiter({ RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '10' });
    const id = user();
    const take = (items: number, at: number) => {
      clock.t = T0 + at;
      return outcome(a.take(id, 'batchItems' as RateBucket, items));
    };
    expect(await take(3, 0)).toBe('ok');
    expect(await take(3, 10_000)).toBe('ok');
    expect(await take(3, 20_000)).toBe('ok');
    // 9 of 10 used: two more items fit once the first batch (3 items, at 0 s) leaves the hour.
    const refused = await take(2, 30_000);
    expect(refused).toBeInstanceOf(RateLimited);
    expect((refused as RateLimited).retryAfterSeconds).toBe((HOUR - 30_000) / 1000);
    expect((refused as RateLimited).message).toMatch(/at most 10 batch items an hour/);
    expect((refused as RateLimited).message).toMatch(/RATE_LIMIT_BATCH_ITEMS_PER_HOUR/);
    // Five more need the first two batches gone (9 + 5 - 10 = 4 to free: 3 + 3).
    expect(await take(5, 40_000)).toMatchObject({ retryAfterSeconds: (HOUR + 10_000 - 40_000) / 1000 });
    expect(await take(1, 50_000)).toBe('ok');
    expect(await take(1, 60_000)).toBeInstanceOf(RateLimited);
    expect(await take(3, HOUR)).toBe('ok');
    // A batch larger than the whole budget can never fit: a 400 naming the setting, not a 429.
    const never = await take(11, 2 * HOUR);
    expect(statusOf(never as ApiError)).toBe(400);
    expect((never as ApiError).message).toMatch(/RATE_LIMIT_BATCH_ITEMS_PER_HOUR/);
  });

  it('counts failed authentications per client address, and refuses the address before any lookup', async () => {
    const a = limiter({ AUTH_MODE: 'apikey', AUTH_FAILURES_PER_MINUTE: '3' });
    const b = limiter({ AUTH_MODE: 'apikey', AUTH_FAILURES_PER_MINUTE: '3' });
    const base = T0 + 10 * HOUR;
    clock.t = base;
    const ip = `10.${serial}.0.1`;
    for (let i = 0; i < 3; i++) {
      expect(await outcome(a.assertAuthAllowed(ip))).toBe('ok');
      clock.t = base + i * 1000;
      await (i % 2 ? a : b).recordAuthFailure(ip);
    }
    clock.t = base + 5000;
    const refused = await outcome(b.assertAuthAllowed(ip));
    expect(refused).toBeInstanceOf(RateLimited);
    expect((refused as RateLimited).retryAfterSeconds).toBe(55);
    expect((refused as RateLimited).message).toMatch(/failed authentications.*at most 3 a minute/);
    // IPv4-mapped IPv6 is the same address; another address is unaffected.
    expect(await outcome(a.assertAuthAllowed(`::ffff:${ip}`))).toBeInstanceOf(RateLimited);
    expect(await outcome(a.assertAuthAllowed(`10.${serial}.0.2`))).toBe('ok');
    clock.t = base + MINUTE;
    expect(await outcome(a.assertAuthAllowed(ip))).toBe('ok');

    // IPv6 is counted per /64: one host can use every address of its /64.
    for (const host of ['2001:db8:7:1::1', '2001:db8:7:1::2', '2001:db8:7:1:ffff:ffff:ffff:ffff'])
      await a.recordAuthFailure(host);
    expect(await outcome(b.assertAuthAllowed('2001:db8:7:1:abcd::9'))).toBeInstanceOf(RateLimited);
    expect(await outcome(b.assertAuthAllowed('2001:db8:7:2::1'))).toBe('ok');

    // Without API keys there is nothing to guess, and 0 switches the limit off.
    const none = limiter({ AUTH_MODE: 'none', AUTH_FAILURES_PER_MINUTE: '3' });
    const off = limiter({ AUTH_MODE: 'apikey', AUTH_FAILURES_PER_MINUTE: '0' });
    for (let i = 0; i < 5; i++) {
      await none.recordAuthFailure('10.9.9.9');
      await off.recordAuthFailure('10.9.9.8');
    }
    expect(await outcome(none.assertAuthAllowed('10.9.9.9'))).toBe('ok');
    expect(await outcome(off.assertAuthAllowed('10.9.9.8'))).toBe('ok');
  });

  it('reads the client address through TRUST_PROXY_HOPS proxies, as Express reads req.ip', () => {
    const request = (forwarded?: string) =>
      ({
        socket: { remoteAddress: '10.1.2.3' },
        headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
      }) as unknown as IncomingMessage;
    const at = (hops: string) => limiter({ TRUST_PROXY_HOPS: hops });
    expect(at('0').clientAddress(request('198.51.100.1, 203.0.113.9'))).toBe('10.1.2.3');
    expect(at('1').clientAddress(request('198.51.100.1, 203.0.113.9'))).toBe('203.0.113.9');
    expect(at('1').clientAddress(request('198.51.100.1,203.0.113.9 '))).toBe('203.0.113.9');
    expect(at('2').clientAddress(request('198.51.100.1, 203.0.113.9'))).toBe('198.51.100.1');
    expect(at('5').clientAddress(request('198.51.100.1, 203.0.113.9'))).toBe('198.51.100.1');
    expect(at('1').clientAddress(request())).toBe('10.1.2.3');
  });
});

describe('RateLimiter without Redis, with an injected clock', () => {
  let dead: Redis;
  const clock = { t: T0 };
  beforeAll(async () => {
    // A connection to a port nothing listens on, failing at once like the gateway's own would.
    dead = new IORedis(await freePort(), '127.0.0.1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      retryStrategy: () => null,
    });
  });
  afterAll(() => dead.disconnect());

  const limiter = (env: Record<string, string>, options: { memoryMaxKeys?: number } = {}) =>
    new RateLimiter(loadConfig({ AUTH_MODE: 'apikey', ...env }), dead, { now: () => clock.t, ...options });

  it('counts requests and wrong keys in a sliding window in memory, with exact Retry-After', async () => {
    const a = limiter({ RATE_LIMIT_REQUESTS_PER_MINUTE: '3', AUTH_FAILURES_PER_MINUTE: '2' });
    const results: ('ok' | number)[] = [];
    for (let i = 0; i < 6; i++) {
      clock.t = T0 + 59_500 + i * 200;
      const result = await outcome(a.take('u', 'requests'));
      results.push(result === 'ok' ? 'ok' : result.getStatus());
    }
    expect(results).toEqual(['ok', 'ok', 'ok', 429, 429, 429]);
    clock.t = T0 + 119_499;
    expect(await outcome(a.take('u', 'requests'))).toMatchObject({ retryAfterSeconds: 1 });
    clock.t = T0 + 119_500;
    expect(await outcome(a.take('u', 'requests'))).toBe('ok');

    await a.recordAuthFailure('192.0.2.1');
    clock.t += 30_000;
    await a.recordAuthFailure('192.0.2.1');
    expect(await outcome(a.assertAuthAllowed('192.0.2.1'))).toMatchObject({ retryAfterSeconds: 30 });
    expect(await outcome(a.assertAuthAllowed('192.0.2.2'))).toBe('ok');
  });

  it('refuses new deliberations and batch items with 503 rather than letting them through uncounted', async () => {
    const a = limiter({});
    for (const bucket of ['deliberations', 'batchItems'] as const) {
      const result = await outcome(a.take('u', bucket));
      expect(result === 'ok' ? 'ok' : result.getStatus()).toBe(503);
      expect((result as ApiError).message).toMatch(/Rate limiting is unavailable/);
    }
    // Switched off, nothing needs counting.
    const off = limiter({ RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0', RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '0' });
    expect(await outcome(off.take('u', 'deliberations'))).toBe('ok');
    expect(await outcome(off.take('u', 'batchItems', 50))).toBe('ok');
  });

  it('keeps at most memoryMaxKeys subjects, forgetting the least recently used', async () => {
    const a = limiter({ AUTH_FAILURES_PER_MINUTE: '1' }, { memoryMaxKeys: 2 });
    clock.t = T0;
    for (const ip of ['192.0.2.10', '192.0.2.11', '192.0.2.12']) await a.recordAuthFailure(ip);
    expect(await outcome(a.assertAuthAllowed('192.0.2.10'))).toBe('ok');
    expect(await outcome(a.assertAuthAllowed('192.0.2.12'))).toBeInstanceOf(RateLimited);
  });
});

describe('limits through the gateway', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    AUTH_FAILURES_PER_MINUTE: '4',
    TRUST_PROXY_HOPS: '1',
    RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '5',
    MAX_ACTIVE_BATCHES_PER_USER: '50',
  });
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  const from = (address: string, token?: string, query = '') =>
    fetch(`${stack.baseUrl}/api/conversations${query}`, {
      headers: { 'x-forwarded-for': address, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });

  it('refuses an address after AUTH_FAILURES_PER_MINUTE wrong keys, before looking its keys up', async () => {
    const key = await stack.createUser('honest');
    // Four wrong keys; requests without a key cost no lookup and are not counted.
    for (let i = 0; i < 4; i++) {
      expect((await from('203.0.113.7', `ck_wrong${i}`)).status).toBe(401);
      expect((await from('203.0.113.7')).status).toBe(401);
    }
    const refused = await from('203.0.113.7', 'ck_wrong4');
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(((await refused.json()) as { message: string }).message).toMatch(
      /Too many failed authentications from your address: at most 4 a minute/,
    );
    // Refused before the lookup, so a valid key from that address waits too; others are unaffected.
    expect((await from('203.0.113.7', key)).status).toBe(429);
    expect((await from('203.0.113.8', key)).status).toBe(200);
    // The SSE stream's ?ticket= is a credential like any other: refused before it is looked up.
    const sse = await fetch(`${stack.baseUrl}/api/deliberations/${randomBytes(4).toString('hex')}/events`, {
      headers: { 'x-forwarded-for': '203.0.113.7' },
    });
    expect(sse.status).toBe(401);
    const sseKey = await fetch(
      `${stack.baseUrl}/api/deliberations/${randomBytes(4).toString('hex')}/events?ticket=cst_x`,
      { headers: { 'x-forwarded-for': '203.0.113.7' } },
    );
    expect(sseKey.status).toBe(429);
  });

  it('counts wrong keys from Socket.IO handshakes and /admin/queues against the same address', async () => {
    const key = await stack.createUser('socket-user');
    const handshake = (token: string, address: string) =>
      new Promise<{ ok: true } | { message: string; data?: { statusCode?: number } }>((resolve) => {
        const socket = io(`${stack.baseUrl}/deliberations`, {
          transports: ['websocket'],
          auth: { token },
          extraHeaders: { 'x-forwarded-for': address },
          reconnection: false,
        });
        socket.on('connect', () => {
          socket.close();
          resolve({ ok: true });
        });
        socket.on('connect_error', (error: Error & { data?: { statusCode?: number } }) => {
          socket.close();
          resolve({ message: error.message, data: error.data });
        });
      });
    const admin = (token: string, address: string) =>
      fetch(`${stack.baseUrl}/admin/queues`, {
        headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address },
        redirect: 'manual',
      });
    for (let i = 0; i < 2; i++) {
      expect(await handshake(`ck_wrong${i}`, '198.51.100.9')).toMatchObject({ message: /unauthorized/ });
      expect((await admin(`ck_bad${i}`, '198.51.100.9')).status).toBe(401);
    }
    // Four wrong keys from one address over both surfaces: the next attempt is refused before a lookup.
    const refused = await handshake(key, '198.51.100.9');
    expect(refused).toMatchObject({
      message: /Too many failed authentications from your address/,
      data: { statusCode: 429 },
    });
    const adminRefused = await admin(key, '198.51.100.9');
    expect(adminRefused.status).toBe(429);
    expect(Number(adminRefused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await handshake(key, '198.51.100.10')).toEqual({ ok: true });
  });

  it('takes batch items from RATE_LIMIT_BATCH_ITEMS_PER_HOUR: a batch over what is left gets 429 and stores nothing', async () => {
    const [key, other] = [await stack.createUser('batcher'), await stack.createUser('other-batcher')];
    const batch = (n: number, tag: string) => ({
      defaults: { councilModels: ['sim/a', 'sim/b'] },
      items: Array.from({ length: n }, (_, i) => ({ question: `${tag} ${i}?` })),
    });
    const submit = (body: unknown, token: string, headers: Record<string, string> = {}) =>
      stack.api<BatchAccepted & { message?: string; fields?: Record<string, string> }>(
        'POST',
        '/api/batches',
        {
          body,
          token,
          headers: { 'x-forwarded-for': '198.51.100.20', ...headers },
        },
      );
    const first = await submit(batch(3, 'first'), key, { 'idempotency-key': 'first-batch' });
    expect(first.status).toBe(202);
    const response = await fetch(`${stack.baseUrl}/api/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(batch(3, 'second')),
    });
    expect(response.status).toBe(429);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(3500);
    expect(((await response.json()) as { message: string }).message).toMatch(
      /at most 5 batch items an hour \(RATE_LIMIT_BATCH_ITEMS_PER_HOUR\)/,
    );
    // What is left still fits, a replay answers what it answered, another key has its own budget.
    expect((await submit(batch(2, 'third'), key)).status).toBe(202);
    const replay = await submit(batch(3, 'first'), key, { 'idempotency-key': 'first-batch' });
    expect(replay.body.batchId).toBe(first.body.batchId);
    expect((await submit(batch(3, 'fourth'), other)).status).toBe(202);
    // A batch bigger than the whole budget is a 400: waiting would never help.
    const huge = await submit(batch(6, 'huge'), other);
    expect(huge.status).toBe(400);
    expect(huge.body.fields?.items).toMatch(/RATE_LIMIT_BATCH_ITEMS_PER_HOUR/);
    const [{ n }]: { n: number }[] = await stack.db.query(
      `SELECT count(*)::int AS n FROM batches b JOIN users u ON u.id = b.user_id WHERE u.name = 'batcher'`,
    );
    expect(n).toBe(2);
  });
});

/** A Redis of this test's own, to kill and bring back (the shared one on 6379 stays up). */
class PrivateRedis {
  child: ChildProcess | null = null;
  constructor(readonly port: number) {}

  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    const probe = new IORedis(this.port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 100 });
    try {
      for (let i = 0; ; i++) {
        try {
          await probe.connect();
          await probe.ping();
          return;
        } catch (error) {
          if (i > 100) throw error;
          probe.disconnect();
          await sleep(100);
        }
      }
    } finally {
      probe.disconnect();
    }
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => child.once('exit', resolve).kill('SIGKILL'));
  }
}

describe('while Redis is down', () => {
  let redis: PrivateRedis;
  let stack: TestStack;

  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    stack = new TestStack({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      AUTH_MODE: 'apikey',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '5',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '10',
      AUTH_FAILURES_PER_MINUTE: '3',
    });
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    // Back (empty) so the stack can clean up its keys.
    if (redis.child?.exitCode !== null || redis.child?.signalCode !== null) await redis.start();
    await stack?.stop();
    await redis.kill();
  }, 60_000);

  const readiness = async () => (await fetch(`${stack.baseUrl}/health/ready`)).status;
  async function until(probe: () => Promise<boolean>): Promise<void> {
    for (let i = 0; !(await probe()); i++) {
      if (i > 300) throw new Error('condition not reached');
      await sleep(100);
    }
  }

  it('bounds reads per replica in memory, refuses new work with 503, and still limits wrong keys', async () => {
    const [reader, writer, later] = [
      await stack.createUser('reader'),
      await stack.createUser('writer'),
      await stack.createUser('later'),
    ];
    await redis.kill();
    await until(async () => (await readiness()) === 503);

    const get = (token: string) => stack.api('GET', '/api/conversations', { token });
    const reads: number[] = [];
    for (let i = 0; i < 7; i++) reads.push((await get(reader)).status);
    expect(reads).toEqual([200, 200, 200, 200, 200, 429, 429]);

    const body = { question: 'While Redis is away?', councilModels: ['sim/a', 'sim/b'] };
    const response = await fetch(`${stack.baseUrl}/api/deliberations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(((await response.json()) as { message: string }).message).toMatch(/rate limiting is unavailable/i);
    const batch = await stack.api<{ message: string }>('POST', '/api/batches', {
      body: { defaults: { councilModels: ['sim/a', 'sim/b'] }, items: [{ question: 'Item?' }] },
      token: writer,
    });
    expect(batch.status).toBe(503);
    expect(batch.body.message).toMatch(/rate limiting is unavailable/i);
    const [{ n }]: { n: number }[] = await stack.db.query(
      `SELECT count(*)::int AS n FROM conversations c JOIN users u ON u.id = c.user_id WHERE u.name = 'writer'`,
    );
    expect(n).toBe(0);

    // Wrong keys: counted in memory meanwhile.
    const wrong: number[] = [];
    for (let i = 0; i < 4; i++) wrong.push((await get(`ck_wrong${i}`)).status);
    expect(wrong).toEqual([401, 401, 401, 429]);

    // Redis back: counting moves back to it (an empty Redis: fresh windows), new work is accepted.
    await redis.start();
    await until(async () => (await readiness()) === 200);
    await until(async () => (await get(later)).status !== 429);
    expect((await stack.api('POST', '/api/deliberations', { body, token: later })).status).toBe(202);
  }, 60_000);

  it("answers the worker's readiness probe 503 with Retry-After, as the gateway's", async () => {
    // A worker process of its own, killed at the end (the stack's in-process workers wait for Redis to close).
    const worker = await stack.spawnWorker();
    const port = /"httpPort":(\d+)/.exec(stack.outputs.get(worker) ?? '')?.[1];
    const ready = () => fetch(`http://127.0.0.1:${port}/health/ready`);
    try {
      expect((await ready()).status).toBe(200);
      await redis.kill();
      await until(async () => (await ready()).status === 503);
      const answer = await ready();
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('5');
      expect(await answer.json()).toEqual({ status: 'error', postgres: 'up', redis: 'down' });
      // The gateway's readiness says the same, with the same Retry-After.
      const gateway = await fetch(`${stack.baseUrl}/health/ready`);
      expect([gateway.status, gateway.headers.get('retry-after')]).toEqual([503, '5']);
      await redis.start();
      await until(async () => (await ready()).status === 200);
      expect((await ready()).headers.get('retry-after')).toBeNull();
    } finally {
      await new Promise((resolve) => worker.once('exit', resolve).kill('SIGKILL'));
      if (redis.child?.exitCode !== null || redis.child?.signalCode !== null) await redis.start();
    }
  }, 90_000);
});

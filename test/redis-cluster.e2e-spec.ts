import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { LIFECYCLE_QUEUE, STAGE_QUEUE, type DeliveredEvent } from '@conclave/contracts';
import type { ProviderLimits } from '@conclave/llm';
import {
  LiveSubscriber,
  RedisFleetLimiter,
  createRedis,
  isCluster,
  leasedCallsOf,
  publishLive,
  type RedisClient,
} from '@conclave/redis';
import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { io, type Socket } from 'socket.io-client';
import { COUNCIL_SEQUENCE, expectContiguous, modeEvents, TestStack } from './support/harness';
import { sleep, until } from './support/wait';

const run = promisify(execFile);
/** A port nothing listens on now (the kernel's choice), below 55536 so none of ours collide. */
async function freePort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port: chosen } = server.address() as { port: number };
        server.close(() => resolve(chosen));
      });
    });
    if (!taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
}

/**
 * Three masters on loopback, no replicas, each a child process of this test with its files in a
 * temporary directory: `redis-server --cluster-enabled yes`, then `redis-cli --cluster create`.
 */
class LocalRedisCluster {
  readonly ports: number[] = [];
  private readonly servers: ChildProcess[] = [];
  private readonly output = new Map<ChildProcess, string>();
  private dir = '';

  async start(): Promise<void> {
    this.dir = await mkdtemp(path.join(tmpdir(), 'conclave-redis-cluster-'));
    const taken = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const port = await freePort(taken);
      // The cluster bus port is set too: the default (port + 10000) may be taken.
      const busPort = await freePort(taken);
      this.ports.push(port);
      const server = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(busPort),
          '--cluster-config-file',
          path.join(this.dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '3000',
          '--dir',
          this.dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--daemonize',
          'no',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      this.servers.push(server);
      this.output.set(server, '');
      const keep = (chunk: Buffer) =>
        this.output.set(server, ((this.output.get(server) ?? '') + chunk.toString()).slice(-8192));
      server.stdout?.on('data', keep);
      server.stderr?.on('data', keep);
    }
    for (const port of this.ports)
      await this.until(port, async () => (await this.cli(port, 'PING')) === 'PONG');
    await run('redis-cli', [
      '--cluster',
      'create',
      ...this.ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    for (const port of this.ports) {
      await this.until(port, async () => /cluster_state:ok/.test(await this.cli(port, 'CLUSTER', 'INFO')));
    }
  }

  /** REDIS_CLUSTER_NODES naming two of the three: the client finds the third itself. */
  get nodes(): string {
    return this.ports
      .slice(0, 2)
      .map((port) => `127.0.0.1:${port}`)
      .join(',');
  }

  async cli(port: number, ...args: string[]): Promise<string> {
    return (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])).stdout.trim();
  }

  /** Kills one node (SIGKILL): its slots go unserved. */
  kill(index: number): void {
    this.servers[index].kill('SIGKILL');
  }

  async stop(): Promise<void> {
    for (const server of this.servers) if (server.exitCode === null) server.kill('SIGKILL');
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  /** What the servers printed, for a failure's message. */
  get logs(): string {
    return [...this.output.values()].join('\n');
  }

  private async until(port: number, test: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (await test().catch(() => false)) return;
      await sleep(100);
    }
    throw new Error(`redis cluster node ${port} did not come up:\n${this.logs}`);
  }
}

/**
 * The single-Redis checks (test/scale-out and test/crash) on a Redis Cluster: a gateway in this
 * process and one in its own, two worker processes, all with REDIS_CLUSTER_NODES.
 */
describe('Redis Cluster: three masters, two gateways, two workers', () => {
  const cluster = new LocalRedisCluster();
  const killCluster = () => void cluster.stop();
  let stack: TestStack;
  let second = '';
  const workers: ChildProcess[] = [];
  const sockets: Socket[] = [];
  const connections: RedisClient[] = [];
  const RATE_LIMIT = 40;

  beforeAll(async () => {
    // Whatever happens to this process, the servers go with it.
    process.once('exit', killCluster);
    await cluster.start();
    stack = new TestStack({
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: cluster.nodes,
      AUTH_MODE: 'apikey',
      SIM_LATENCY_MS: '200',
      SIM_STREAM_PIECES: '30',
      WORKER_CONCURRENCY: '8',
      WORKER_LOCK_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      RATE_LIMIT_REQUESTS_PER_MINUTE: String(RATE_LIMIT),
      // A revoked key's streams close on the Redis announcement alone (no periodic recheck meanwhile).
      STREAM_KEY_RECHECK_MS: '600000',
      // Every simulated call goes through the fleet limiter's scripts on the cluster.
      PROVIDER_LIMITS: JSON.stringify({ simulated: { maxConcurrent: 64, rpm: 100_000 } }),
    });
    expect(stack.config.queuePrefix).toBe(`{${stack.config.redisPrefix}}`);
    await stack.start({ worker: false });
    const [gateway, ...spawned] = await Promise.all([
      stack.spawnGateway(),
      stack.spawnWorker(),
      stack.spawnWorker(),
    ]);
    second = gateway.baseUrl;
    workers.push(...spawned);
  }, 90_000);

  afterAll(async () => {
    for (const socket of sockets) socket.disconnect();
    for (const connection of connections) connection.disconnect();
    try {
      await stack?.stop();
    } finally {
      await cluster.stop();
      process.removeListener('exit', killCluster);
    }
  });

  const gateways = () => [stack.baseUrl, second];

  const connect = async (baseUrl: string, token: string): Promise<Socket> => {
    const socket = io(`${baseUrl}/deliberations`, {
      transports: ['websocket'],
      auth: { token },
      reconnection: false,
    });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('connect_error', reject);
    });
    return socket;
  };

  const call = async <T>(
    baseUrl: string,
    method: string,
    url: string,
    token: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: T }> => {
    const response = await fetch(`${baseUrl}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  };

  const start = async (
    baseUrl: string,
    token: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    const response = await call<{ messageId: string }>(
      baseUrl,
      'POST',
      '/api/deliberations',
      token,
      body,
      headers,
    );
    if (response.status !== 202) throw new Error(`${response.status}: ${JSON.stringify(response.body)}`);
    return response.body;
  };

  /** Every event a socket receives for `messageId` until the terminal one (deltas when asked). */
  const collect = (socket: Socket, messageId: string, deltas = false): Promise<DeliveredEvent[]> =>
    new Promise((resolve, reject) => {
      const events: DeliveredEvent[] = [];
      const timer = setTimeout(
        () =>
          reject(new Error(`no terminal event for ${messageId}: ${events.map((e) => e.type).join(', ')}`)),
        40_000,
      );
      socket.onAny((name: string, event: DeliveredEvent) => {
        if (event?.messageId !== messageId) return;
        events.push(event);
        if (name === 'complete' || name === 'error' || name === 'cancelled') {
          clearTimeout(timer);
          resolve(events);
        }
      });
      void socket
        .emitWithAck('subscribe', { messageId, afterSeq: 0, ...(deltas ? { deltas: true } : {}) })
        .then((ack: unknown) => {
          if (!(ack as { ok?: boolean })?.ok) {
            clearTimeout(timer);
            reject(new Error(`subscribe refused: ${JSON.stringify(ack)}`));
          }
        });
    });

  const isLive = (e: DeliveredEvent) => e.type === 'model_delta' || e.type === 'model_partial';

  it('runs every mode: each event reaches clients on both gateways once and in seq order, deltas included', async () => {
    const token = await stack.createUser('modes');
    const [onFirst, onSecond] = await Promise.all(gateways().map((g) => connect(g, token)));
    const requests = [
      { question: 'Council through the first gateway?', councilModels: ['sim/a', 'sim/b', 'sim/c'] },
      {
        question: 'Vote through the second?',
        mode: 'vote',
        modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
      },
      {
        question: 'Jury through the first?',
        mode: 'jury',
        modeConfig: {
          content: 'Water boils at 100 °C at sea level.',
          jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
        },
      },
      {
        question: 'Debate through the second?',
        mode: 'debate',
        modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
      },
      {
        question: 'How many piano tuners in Chicago?',
        mode: 'delphi',
        modeConfig: {
          panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'],
          facilitatorModel: 'sim/f',
          maxRounds: 2,
        },
      },
      { question: 'Another council through the second?', councilModels: ['sim/d', 'sim/e'] },
    ];
    // The same Idempotency-Key on either gateway starts one deliberation.
    const idempotent = { 'idempotency-key': 'cluster-run-1' };
    const accepted = await Promise.all(
      requests.map((body, i) => start(gateways()[i % 2], token, body, i === 0 ? idempotent : {})),
    );
    expect(await start(second, token, requests[0], idempotent)).toEqual(accepted[0]);

    const received = await Promise.all(
      accepted.map(async ({ messageId }, i) => {
        // The first gateway's client of the first council also asks for the live deltas.
        const [first, secondEvents] = await Promise.all([
          collect(onFirst, messageId, i === 0),
          collect(onSecond, messageId),
        ]);
        return { messageId, first, second: secondEvents };
      }),
    );
    for (const [i, { messageId, first, second: other }] of received.entries()) {
      const stored = first.filter((e) => !isLive(e));
      expect({ i, last: stored.at(-1)?.type }).toEqual({ i, last: 'complete' });
      expectContiguous(stored);
      expect(other).toEqual(stored);
      const [{ n }] = await stack.db.query(
        'SELECT count(*)::int AS n FROM deliberation_events WHERE message_id = $1',
        [messageId],
      );
      expect(stored).toHaveLength(n);
    }
    expect(modeEvents(received[0].second).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);

    // Deltas came over the sharded live channel and rebuild each answer streamed after the watch.
    const watched = received[0].first;
    const texts = new Map<string, string>();
    for (const event of watched.filter(isLive)) {
      const piece = event as unknown as DeliveredEvent<{
        stage: string;
        participant: string;
        text: string;
        offset?: number;
      }>;
      const key = `${piece.stage}|${piece.participant}`;
      if (event.type === 'model_partial') texts.set(key, piece.text);
      else {
        expect(piece.offset).toBe(texts.get(key)?.length ?? 0);
        texts.set(key, (texts.get(key) ?? '') + piece.text);
      }
    }
    expect(texts.size).toBeGreaterThan(0);
    for (const event of watched) {
      if (event.type !== 'model_progress' || event.state !== 'succeeded') continue;
      const key = `${String(event.stage)}|${String(event.participant)}`;
      if (texts.has(key)) expect(texts.get(key)).toBe(event.content);
    }
    // Every watch ended with its subscription: no shard channel stays subscribed on any master.
    for (const port of cluster.ports) {
      expect(await cluster.cli(port, 'PUBSUB', 'SHARDCHANNELS', `${stack.config.redisPrefix}:live:*`)).toBe(
        '',
      );
    }
  }, 60_000);

  it('another worker completes a deliberation whose worker is SIGKILLed mid-stage', async () => {
    const token = await stack.createUser('crash');
    const socket = await connect(stack.baseUrl, token);
    const { messageId } = await start(second, token, {
      question: 'Survive a crash on a cluster',
      councilModels: ['sim/slow1:delay3000@answer', 'sim/slow2:delay3000@answer', 'sim/fast'],
      chairmanModel: 'sim/fast',
    });
    const events: DeliveredEvent[] = [];
    let fastAnswered: () => void = () => undefined;
    const fastDone = new Promise<void>((resolve) => (fastAnswered = resolve));
    const finished = new Promise<void>((resolve) => {
      socket.onAny((name: string, event: DeliveredEvent) => {
        if (event?.messageId !== messageId) return;
        events.push(event);
        if (
          event.type === 'model_progress' &&
          event.participant === 'sim/fast' &&
          event.state === 'succeeded'
        ) {
          fastAnswered();
        }
        if (name === 'complete' || name === 'error') resolve();
      });
    });
    expect(await socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });

    // The worker holding stage 1, as BullMQ records it (host:pid) in the hash-tagged queue.
    const redis = createRedis(stack.config, 'worker');
    connections.push(redis);
    expect(isCluster(redis)).toBe(true);
    const queue = new Queue(STAGE_QUEUE, { connection: redis, prefix: stack.config.queuePrefix });
    let holder: ChildProcess | undefined;
    try {
      for (let i = 0; i < 100 && !holder; i++) {
        const job = (await queue.getActive()).find(
          (j) => j.data.messageId === messageId && j.data.stage === 'stage1',
        );
        holder = workers.find((w) => w.pid === Number(job?.processedBy?.split(':').at(-1)));
        if (!holder) await sleep(100);
      }
    } finally {
      await queue.close();
    }
    if (!holder) throw new Error('no worker took stage 1');

    await fastDone; // the slow calls are still in flight
    // ... and listed by the holder's heartbeat: the worker taking over counts them.
    await until(
      async () =>
        Object.values(await redis.hgetall(`${stack.config.queuePrefix}:watch:leases`)).some(
          (raw) =>
            (leasedCallsOf(raw, messageId)?.calls.filter((c) => c.stage === 'stage1').length ?? 0) >= 2,
        ),
      'the heartbeat to list the slow calls',
      20_000,
    );
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(events.filter((e) => e.type === 'model_progress' && e.state === 'started')).toHaveLength(3);
    expect(events.some((e) => e.type === 'stage1_complete')).toBe(false);

    await finished;
    expectContiguous(events);
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const rows = await stack.stageRows(messageId);
    expect(rows).toHaveLength(9); // three answers, the label map, three rankings, the aggregate, one synthesis
    // The fast answer stored before the crash was reused, not asked for again; the two slow calls
    // that died with the holder are counted (usage-only rows).
    const calls: { stage: string; n: number }[] = await stack.db.query(
      `SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage <> 'unstored'
       GROUP BY stage ORDER BY stage`,
      [messageId],
    );
    expect(calls).toEqual([
      { stage: 'stage1', n: 3 },
      { stage: 'stage2', n: 3 },
      { stage: 'stage3', n: 1 },
      { stage: 'title', n: 1 },
    ]);
    // (and the title call, when its answer had not been stored yet)
    const lost: { model: string; title: boolean }[] = await stack.db.query(
      `SELECT model, call_key LIKE '%:title:title:%' AS title FROM model_calls
       WHERE message_id = $1 AND stage = 'unstored' ORDER BY model`,
      [messageId],
    );
    expect(lost.filter((r) => !r.title).map((r) => r.model)).toEqual([
      'sim/slow1:delay3000@answer',
      'sim/slow2:delay3000@answer',
    ]);
    expect(lost.filter((r) => r.title).length).toBeLessThanOrEqual(1);
  }, 45_000);

  it("a live channel's publish reaches and counts every subscriber, whichever node each is connected to", async () => {
    // Workers stop sending a deliberation's deltas when a publish is heard by nobody: the count must be whole.
    const channel = `${stack.config.redisPrefix}:live:count-check`;
    const heard: string[][] = [[], []];
    const subscribers = heard.map((into) => {
      const subscriber = new LiveSubscriber(stack.config);
      subscriber.onMessage((on, message) => {
        if (on === channel) into.push(message);
      });
      return subscriber;
    });
    const publisher = createRedis(stack.config, 'worker');
    connections.push(publisher);
    try {
      await Promise.all(subscribers.map((s) => s.subscribe(channel)));
      const counts: number[] = [];
      for (let i = 0; i < 12; i++) counts.push(await publishLive(publisher, channel, `m${i}`));
      expect(counts).toEqual(Array(12).fill(2));
      await subscribers[0].unsubscribe(channel);
      expect(await publishLive(publisher, channel, 'one left')).toBe(1);
      await subscribers[1].unsubscribe(channel);
      expect(await publishLive(publisher, channel, 'nobody')).toBe(0);
      const sent = Array.from({ length: 12 }, (_, i) => `m${i}`);
      for (let i = 0; i < 50 && heard[1].length < 13; i++) await sleep(20);
      expect(heard).toEqual([sent, [...sent, 'one left']]);
    } finally {
      for (const subscriber of subscribers) subscriber.disconnect();
    }
  }, 20_000);

  it('counts rate limits across both gateways and fleet limits across workers in the cluster', async () => {
    // RATE_LIMIT_REQUESTS_PER_MINUTE across the two gateways: one count (each counting alone would admit twice as many).
    const token = await stack.createUser('limited');
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT + 4; i++) {
      statuses.push((await call(gateways()[i % 2], 'GET', '/api/conversations', token)).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(RATE_LIMIT);
    expect(statuses.slice(RATE_LIMIT)).toEqual([429, 429, 429, 429]);

    // Two limiters on two cluster connections, as two workers: never more than maxConcurrent at once.
    const limits: ProviderLimits = { providers: { 'openai-compatible': { maxConcurrent: 2 } }, models: {} };
    const fleet = [0, 1].map(() => {
      const redis = createRedis(stack.config, 'worker');
      connections.push(redis);
      return new RedisFleetLimiter(redis, stack.config.redisPrefix, limits);
    });
    let inFlight = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const limiter = fleet[i % 2];
        const lease = await limiter.acquire(
          { provider: 'openai-compatible', model: `local/m${i}` },
          new AbortController().signal,
        );
        inFlight += 1;
        most = Math.max(most, inFlight);
        await sleep(10);
        inFlight -= 1;
        await limiter.release(lease);
      }),
    );
    expect(most).toBe(2);
    const probe = connections[connections.length - 1];
    expect(await probe.zcard(`${stack.config.redisPrefix}:limits:{openai-compatible}:concurrent`)).toBe(0);
    for (const limiter of fleet) limiter.close();
  }, 30_000);

  it('announces a revoked key through the cluster: its sockets on both gateways close at once', async () => {
    const token = await stack.createUser('leaver');
    const open = await Promise.all(gateways().map((g) => connect(g, token)));
    const closed = open.map(
      (socket) => new Promise<string>((resolve) => socket.once('disconnect', (reason) => resolve(reason))),
    );
    const revoked = await stack.revokeKey(token.slice(0, 8));
    expect(revoked.stdout).toMatch(/revoked 1 key/);
    expect(revoked.stderr).not.toMatch(/could not tell the gateways/);
    // STREAM_KEY_RECHECK_MS is ten minutes here: only the announcement can close them now.
    expect(await Promise.all(closed)).toEqual(['io server disconnect', 'io server disconnect']);
  }, 30_000);

  it('serves the queue dashboard, and readiness reports the cluster: up, then down once a master is gone', async () => {
    const admin = await stack.createUser('operator', 'admin');
    const board = await call<{ queues: { name: string; counts: Record<string, number> }[] }>(
      second,
      'GET',
      '/admin/queues/api/queues',
      admin,
    );
    expect(board.status).toBe(200);
    expect(board.body.queues.map((q) => q.name)).toEqual([STAGE_QUEUE, LIFECYCLE_QUEUE]);
    expect(board.body.queues[0].counts.completed).toBeGreaterThan(0);
    // BullMQ's keys carry the hash tag: all of the queue in one slot.
    const redis = createRedis(stack.config, 'worker') as Cluster;
    connections.push(redis);
    expect(await redis.exists(`{${stack.config.redisPrefix}}:${STAGE_QUEUE}:meta`)).toBe(1);
    expect(await redis.exists(`${stack.config.redisPrefix}:${STAGE_QUEUE}:meta`)).toBe(0);

    for (const gateway of gateways()) {
      const ready = await fetch(`${gateway}/health/ready`);
      expect({ gateway, status: ready.status }).toEqual({ gateway, status: 200 });
      expect(await ready.json()).toMatchObject({ redis: 'up' });
    }
    // A master dies (no replica to take over): its nodes still answer PING, but the slots it served do not.
    cluster.kill(2);
    let last: { status: number; body: unknown } = { status: 0, body: null };
    for (let i = 0; i < 100 && last.status !== 503; i++) {
      const ready = await fetch(`${stack.baseUrl}/health/ready`);
      last = { status: ready.status, body: await ready.json() };
      if (last.status !== 503) await sleep(200);
    }
    expect(last).toEqual({ status: 503, body: expect.objectContaining({ redis: 'down', postgres: 'up' }) });
  }, 45_000);
});

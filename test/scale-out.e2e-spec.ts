import type { ChildProcess } from 'node:child_process';
import { STAGE_QUEUE, type BatchView, type DeliveredEvent } from '@conclave/contracts';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { io, type Socket } from 'socket.io-client';
import { TestStack, expectContiguous } from './support/harness';

const SHUTDOWN_TIMEOUT_MS = 4000;

/**
 * Several gateways and several workers, each its own process, sharing only PostgreSQL and Redis,
 * as behind a load balancer.
 */
describe('scale-out: two gateway processes, workers that come and go', () => {
  const stack = new TestStack({
    // A load test in single-user mode: every request counts against the one user (OPERATIONS.md).
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    SIM_LATENCY_MS: '120',
    WORKER_CONCURRENCY: '6',
    WORKER_LOCK_MS: '3000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    WORKER_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    RECONCILE_INTERVAL_MS: '2000',
    RECONCILE_IDLE_MS: '8000',
  });
  const gateways: string[] = [];
  const workers: ChildProcess[] = [];
  /** Workers the tests stopped (the others should still run). */
  const stopped = new Set<ChildProcess>();
  const sockets: Socket[] = [];

  beforeAll(async () => {
    await stack.start({ worker: false });
    const [g1, g2, w1, w2] = await Promise.all([
      stack.spawnGateway(),
      stack.spawnGateway(),
      stack.spawnWorker(),
      stack.spawnWorker(),
    ]);
    gateways.push(g1.baseUrl, g2.baseUrl);
    workers.push(w1, w2);
  }, 90_000);
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect();
    await stack.stop();
  });

  const connect = async (baseUrl: string): Promise<Socket> => {
    const socket = io(`${baseUrl}/deliberations`, { transports: ['websocket'], reconnection: false });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('connect_error', reject);
    });
    return socket;
  };
  const post = async <T>(baseUrl: string, path: string, body: unknown): Promise<T> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status !== 202) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };

  /** Where a message stands in the store, for a failure's message. */
  const stored = async (messageId: string): Promise<string> => {
    const [row] = (await stack.db.query('SELECT status, stage, last_seq FROM messages WHERE id = $1', [
      messageId,
    ])) as { status: string; stage: string | null; last_seq: number }[];
    return row ? `${row.status} at ${row.stage ?? '-'}, ${row.last_seq} events stored` : 'not stored';
  };

  /** Every event a socket receives for `messageId`, until the terminal one. */
  const collect = (socket: Socket, messageId: string): Promise<DeliveredEvent[]> =>
    new Promise((resolve, reject) => {
      const events: DeliveredEvent[] = [];
      const timer = setTimeout(() => {
        void stored(messageId).then((where) =>
          reject(
            new Error(
              `no terminal event for ${messageId} after ${events.length} received (${events
                .map((e) => e.type)
                .slice(-5)
                .join(', ')}); stored: ${where}`,
            ),
          ),
        );
      }, 45_000);
      socket.onAny((name: string, event: DeliveredEvent) => {
        if (event?.messageId !== messageId) return;
        events.push(event);
        if (name === 'complete' || name === 'error') {
          clearTimeout(timer);
          resolve(events);
        }
      });
      void socket.emitWithAck('subscribe', { messageId, afterSeq: 0 }).then((ack: unknown) => {
        if (!(ack as { ok?: boolean })?.ok) {
          clearTimeout(timer);
          reject(new Error(`subscribe refused: ${JSON.stringify(ack)}`));
        }
      });
    });

  it('delivers every event to clients on either gateway exactly once and in seq order', async () => {
    const [onFirst, onSecond] = await Promise.all(gateways.map(connect));
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
      { question: 'Another council through the first?', councilModels: ['sim/d', 'sim/e'] },
      {
        question: 'How many piano tuners in Chicago?',
        mode: 'delphi',
        modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f' },
      },
    ];
    const accepted = await Promise.all(
      requests.map((body, i) => post<{ messageId: string }>(gateways[i % 2], '/api/deliberations', body)),
    );
    const received = await Promise.all(
      accepted.map(async ({ messageId }) => {
        const [first, second] = await Promise.all([
          collect(onFirst, messageId),
          collect(onSecond, messageId),
        ]);
        return { messageId, first, second };
      }),
    );
    for (const { messageId, first, second } of received) {
      expectContiguous(first);
      expect(first.at(-1)?.type).toBe('complete');
      expect(second).toEqual(first);
      const [{ n }] = await stack.db.query(
        'SELECT count(*)::int AS n FROM deliberation_events WHERE message_id = $1',
        [messageId],
      );
      expect(first).toHaveLength(n);
    }
  }, 90_000);

  it('finishes a batch while a third worker joins and the others leave (SIGTERM, then SIGKILL)', async () => {
    const items = Array.from({ length: 24 }, (_, i) => ({ question: `Item ${i}: what is ${i} squared?` }));
    const batch = await post<{ batchId: string }>(gateways[0], '/api/batches', {
      defaults: { councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' },
      items,
      concurrency: 8,
      generateTitles: false,
    });
    const view = async () =>
      (await (await fetch(`${gateways[1]}/api/batches/${batch.batchId}`)).json()) as BatchView;
    const waitFor = async (test: (v: BatchView) => boolean, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const current = await view();
        if (test(current)) return current;
        if (Date.now() > deadline) throw new Error(`batch stuck at ${JSON.stringify(current)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };

    await waitFor((v) => v.complete >= 3, 30_000);
    workers.push(await stack.spawnWorker());
    await waitFor((v) => v.complete >= 6, 30_000);

    // A rolling deploy stops a worker: it drains within its shutdown timeout and exits cleanly.
    const leaving = workers[0];
    const stoppedAt = Date.now();
    const exit = new Promise<number | null>((resolve) => leaving.once('exit', (code) => resolve(code)));
    stopped.add(leaving);
    leaving.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 5000);

    // A node dies: its jobs stall, and the last worker takes them over without failing them.
    await waitFor((v) => v.complete >= 10, 30_000);
    stopped.add(workers[1]);
    workers[1].kill('SIGKILL');

    const done = await waitFor((v) => v.status === 'complete', 60_000);
    expect(done).toMatchObject({ total: 24, complete: 24, failed: 0, cancelled: 0 });

    const perMessage: { stage_rows: number; calls: number; events: number; distinct_seq: number }[] =
      await stack.db.query(
        `SELECT
           (SELECT count(*)::int FROM deliberation_stages s WHERE s.message_id = m.id) AS stage_rows,
           (SELECT count(*)::int FROM model_calls c WHERE c.message_id = m.id AND c.stage <> 'unstored') AS calls,
           (SELECT count(*)::int FROM deliberation_events e WHERE e.message_id = m.id) AS events,
           (SELECT count(DISTINCT seq)::int FROM deliberation_events e WHERE e.message_id = m.id) AS distinct_seq
         FROM messages m WHERE m.batch_id = $1`,
        [batch.batchId],
      );
    expect(perMessage).toHaveLength(24);
    // Three answers, the label map, three rankings, the aggregate, one synthesis: once each,
    // however often a stage ran; and seven model calls with their outcomes (calls that died in
    // flight with the killed worker are counted besides, as usage-only rows: crash.e2e-spec).
    for (const row of perMessage) {
      expect(row.stage_rows).toBe(9);
      expect(row.calls).toBe(7);
      expect(row.distinct_seq).toBe(row.events);
    }
    const statuses: { status: string; n: number }[] = await stack.db.query(
      `SELECT status, count(*)::int AS n FROM messages WHERE batch_id = $1 GROUP BY status`,
      [batch.batchId],
    );
    expect(statuses).toEqual([{ status: 'complete', n: 24 }]);
  }, 150_000);

  it('a stopping worker hands a stage that outlasts its shutdown timeout back to the fleet', async () => {
    const socket = await connect(gateways[0]);
    const alive = () => workers.filter((w) => w.exitCode === null && w.signalCode === null);
    if (alive().length < 2) workers.push(await stack.spawnWorker());
    const slowMs = SHUTDOWN_TIMEOUT_MS + 4000;
    const postedAt = Date.now();
    const { messageId } = await post<{ messageId: string }>(gateways[0], '/api/deliberations', {
      question: 'Slow one?',
      councilModels: ['sim/quick', `sim/slow:delay${slowMs}@answer`],
    });
    const events = collect(socket, messageId);
    // Find the process that holds the stage (BullMQ records the worker's name, host:pid).
    const redis = new IORedis(stack.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue(STAGE_QUEUE, { connection: redis, prefix: stack.config.redisPrefix });
    let holder: ChildProcess | undefined;
    for (let i = 0; i < 100 && !holder; i++) {
      const job = (await queue.getActive()).find(
        (j) => j.data.messageId === messageId && j.data.stage === 'stage1',
      );
      const pid = Number(job?.processedBy?.split(':').at(-1));
      holder = alive().find((w) => w.pid === pid);
      if (!holder) await new Promise((r) => setTimeout(r, 100));
    }
    await queue.close();
    redis.disconnect();
    if (!holder) throw new Error('no worker took the stage');
    // The fleet the stage is handed back to: another live worker (one that died on its own is
    // reported with what it printed, and replaced).
    for (const worker of workers) {
      if (
        worker !== holder &&
        (worker.exitCode !== null || worker.signalCode !== null) &&
        !stopped.has(worker)
      ) {
        console.log(
          `worker ${worker.pid} ended on its own (${worker.exitCode ?? worker.signalCode}):\n${stack.outputs.get(worker) ?? ''}`,
        );
        stopped.add(worker);
      }
    }
    if (!alive().some((w) => w !== holder)) workers.push(await stack.spawnWorker());

    const stoppedAt = Date.now();
    stopped.add(holder);
    const exit = new Promise<number | null>((resolve) => holder.once('exit', (code) => resolve(code)));
    holder.kill('SIGTERM');
    expect(await exit).toBe(0);
    const tookMs = Date.now() - stoppedAt;
    // The worker waits for the stage until the timeout; on a loaded machine finding the holder can
    // take long enough that the slow call ends first, which ends the wait legitimately earlier.
    const leftOfSlowCall = slowMs - (stoppedAt - postedAt);
    expect(tookMs).toBeGreaterThanOrEqual(Math.min(SHUTDOWN_TIMEOUT_MS, leftOfSlowCall) - 500);
    expect(tookMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 5000);
    // The other worker takes the stage over once the lock lapses, and the deliberation completes.
    const received = await events;
    expect(received.at(-1)?.type).toBe('complete');
    expectContiguous(received);
    const [{ n }] = await stack.db.query(
      `SELECT count(*)::int AS n FROM deliberation_stages WHERE message_id = $1 AND stage_type = 'stage1'`,
      [messageId],
    );
    expect(n).toBe(2);
  }, 90_000);

  it('logs JSON lines that carry the messageId and job id, without question text', async () => {
    const marker = 'zebra-quartz-marker';
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) {
      workers.push(await stack.spawnWorker());
    }
    const { messageId } = await post<{ messageId: string }>(gateways[1], '/api/deliberations', {
      question: `Secret plans ${marker}?`,
      councilModels: ['sim/a', 'sim/b'],
    });
    await collect(await connect(gateways[1]), messageId);
    const read = () => {
      const lines = [...stack.outputs.values()]
        .join('\n')
        .split('\n')
        .filter((line) => line.trim());
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      return { lines, about: records.filter((r) => r.messageId === messageId) };
    };
    // The last stage logs just after it published `complete`.
    for (let i = 0; i < 50 && read().about.length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    const { lines, about } = read();
    expect(about.length).toBeGreaterThanOrEqual(3); // one per stage at least
    for (const record of about) {
      expect(record).toEqual(expect.objectContaining({ jobId: expect.any(String), level: 'info' }));
    }
    expect(lines.some((line) => line.includes(marker))).toBe(false);
  }, 60_000);
});

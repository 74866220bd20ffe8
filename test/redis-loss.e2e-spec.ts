import type { ChildProcess } from 'node:child_process';
import type { DeliveredEvent } from '@conclave/contracts';
import IORedis from 'ioredis';
import type { Socket } from 'socket.io-client';
import { PROCESS_START_TIMEOUT_MS, TestStack, expectContiguous } from './support/harness';
import { freePort } from './support/private-postgres';
import { PrivateRedis } from './support/private-redis';
import { sleep } from './support/wait';

const requests = (tag: string) => [
  {
    question: `${tag}: council, what makes a good API?`,
    councilModels: ['sim/a', 'sim/b', 'sim/c'],
    chairmanModel: 'sim/chair',
  },
  {
    question: `${tag}: vote, which editor?`,
    mode: 'vote',
    modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
  },
  {
    question: `${tag}: jury`,
    mode: 'jury',
    modeConfig: {
      content: 'Water boils at 100 °C at sea level.',
      jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
      foremanModel: 'sim/foreman',
    },
  },
  {
    question: `${tag}: debate, tabs or spaces?`,
    mode: 'debate',
    modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
  },
  {
    question: `${tag}: delphi, how many piano tuners in Chicago?`,
    mode: 'delphi',
    modeConfig: {
      panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'],
      facilitatorModel: 'sim/f',
      maxRounds: 2,
    },
  },
];

/**
 * Redis loses every key (a restart without persistence, a flushed instance) while deliberations
 * and a batch are queued or running. PostgreSQL is the source of truth: the workers' reconciler
 * finds the work whose jobs are gone and enqueues it again — at worker start, and periodically.
 */
describe('Redis loses everything mid-run', () => {
  const stack = new TestStack({
    SIM_LATENCY_MS: '300',
    // Few slots: at any moment some stages run and more wait in the queue, to be lost with it.
    WORKER_CONCURRENCY: '3',
    WORKER_LOCK_MS: '3000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    WORKER_SHUTDOWN_TIMEOUT_MS: '2000',
    RECONCILE_INTERVAL_MS: '500',
    RECONCILE_IDLE_MS: '1500',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  });
  let socket: Socket;
  beforeAll(async () => {
    await stack.start({ worker: false });
    socket = await stack.connect();
  }, 60_000);
  const spawned: ChildProcess[] = [];
  afterAll(async () => {
    // Killed and gone before the stack stops, so no pipe of theirs outlives the test.
    await Promise.all(
      spawned
        .filter((child) => child.exitCode === null && child.signalCode === null)
        .map((child) => new Promise((resolve) => child.once('exit', resolve).kill('SIGKILL'))),
    );
    await stack.stop();
  }, 30_000);

  /**
   * Every key of this test's prefix: this test's whole "Redis" (other tests share the server).
   * Key by key while the workers run on, so an enqueue can land between the listing and the
   * deletes and leave part of a job behind (its hash without the list that held it): the queue is
   * lost in pieces, as with an eviction, and the reconciler must cope with that too.
   */
  const wipeRedis = async (): Promise<number> => {
    const redis = new IORedis(stack.config.redisUrl);
    try {
      let deleted = 0;
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(
          cursor,
          'MATCH',
          `${stack.config.redisPrefix}:*`,
          'COUNT',
          1000,
        );
        cursor = next;
        if (keys.length > 0) deleted += await redis.del(...keys);
      } while (cursor !== '0');
      return deleted;
    } finally {
      redis.disconnect();
    }
  };

  /**
   * Starts the mixed deliberations and a batch; resolves once stages run and more wait in the
   * queue (those jobs exist only in Redis), with the number of jobs waiting. Their subscribers wait
   * `followMs` for the end. The queue is paused while the work is submitted: the workers then
   * find it all queued at once, so that state holds until the first deliberations end, however
   * fast the workers run against the gateway that takes the requests (the same process as the
   * in-process worker, on a loaded host). Submitted into a running queue, the shorter
   * deliberations could be done before the batch was even accepted.
   */
  const startWork = (tag: string, followMs: number) =>
    stack.stageQueue(async (queue) => {
      await queue.pause();
      let submitted: { messageIds: string[]; following: Promise<DeliveredEvent[]>[]; batchId: string };
      try {
        const accepted = await Promise.all(requests(tag).map((body) => stack.deliberate(body)));
        const messageIds = accepted.map((a) => a.messageId);
        const following = messageIds.map((id) => stack.follow(id, { socket, timeoutMs: followMs }));
        following.forEach((f) => f.catch(() => undefined)); // awaited by the case; not unhandled meanwhile
        const batch = await stack.api<{ batchId: string }>('POST', '/api/batches', {
          body: {
            name: `${tag} batch`,
            defaults: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
            items: Array.from({ length: 6 }, (_, i) => ({
              question: `${tag} item ${i}: what is ${i} squared?`,
            })),
            concurrency: 2,
            generateTitles: false,
          },
        });
        expect(batch.status).toBe(202);
        submitted = { messageIds, following, batchId: batch.body.batchId };
      } finally {
        await queue.resume();
      }
      let waiting = 0;
      await waitFor(
        async () => {
          const [row]: { running: number }[] = await stack.db.query(
            `SELECT count(*)::int AS running FROM messages WHERE id = ANY($1) AND status = 'running'`,
            [submitted.messageIds],
          );
          const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed');
          waiting = counts.waiting + counts.prioritized + counts.delayed;
          return row.running >= 2 && waiting >= 3;
        },
        20_000,
        'stages running and others waiting',
      );
      return { ...submitted, waiting };
    });

  const waitFor = async (test: () => Promise<boolean>, timeoutMs: number, what = 'condition') => {
    const deadline = Date.now() + timeoutMs;
    while (!(await test())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  };

  /** What is unfinished right now among the deliberations and the batch's items. */
  const unfinished = async (messageIds: string[], batchId: string): Promise<number> => {
    const [row]: { n: number }[] = await stack.db.query(
      `SELECT count(*)::int AS n FROM messages WHERE role = 'assistant' AND status IN ('queued', 'running')
         AND (id = ANY($1) OR batch_id = $2)`,
      [messageIds, batchId],
    );
    return row.n;
  };

  /** Everything finished, once: statuses, stage rows, events, the socket's view, the batch. */
  const expectAllFinishedOnce = async (
    messageIds: string[],
    following: Promise<DeliveredEvent[]>[],
    batchId: string,
  ) => {
    const received = await Promise.all(following);
    const batchStatus = async () =>
      (
        (await stack.db.query('SELECT status FROM batches WHERE id = $1', [batchId])) as { status: string }[]
      )[0].status;
    await waitFor(async () => (await batchStatus()) === 'complete', 30_000, `batch ${batchId} to complete`);
    const batch = await stack.api<{ status: string; total: number; complete: number; failed: number }>(
      'GET',
      `/api/batches/${batchId}`,
    );
    expect(batch.body).toMatchObject({ status: 'complete', total: 6, complete: 6, failed: 0 });

    const items: { id: string }[] = await stack.db.query(
      `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
      [batchId],
    );
    const all = [...messageIds, ...items.map((i) => i.id)];
    const statuses: { status: string; n: number }[] = await stack.db.query(
      `SELECT status, count(*)::int AS n FROM messages WHERE id = ANY($1) GROUP BY status`,
      [all],
    );
    expect(statuses).toEqual([{ status: 'complete', n: all.length }]);

    // Each stage row exactly once, however often its stage ran.
    const twice = await stack.db.query(
      `SELECT message_id, stage_type, model, participant, count(*)::int AS n FROM deliberation_stages
       WHERE message_id = ANY($1) GROUP BY message_id, stage_type, model, participant HAVING count(*) > 1`,
      [all],
    );
    expect(twice).toEqual([]);
    const rowless: { id: string }[] = await stack.db.query(
      `SELECT m.id FROM messages m WHERE m.id = ANY($1)
         AND NOT EXISTS (SELECT 1 FROM deliberation_stages s WHERE s.message_id = m.id)`,
      [all],
    );
    expect(rowless).toEqual([]);

    // Events: seq 1..n without gap or duplicate, exactly one terminal event, and it is the last.
    for (const id of all) {
      const events: { seq: number; type: string }[] = await stack.db.query(
        'SELECT seq, type FROM deliberation_events WHERE message_id = $1 ORDER BY seq',
        [id],
      );
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'complete' || e.type === 'error')).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('complete');
    }

    // The Socket.IO subscriber through the gateway saw each deliberation to its end, in order.
    received.forEach((events, i) => {
      expectContiguous(events);
      expect(events.at(-1)?.type).toBe('complete');
      expect(events.at(-1)?.messageId).toBe(messageIds[i]);
    });
    for (const [i, id] of messageIds.entries()) {
      const [{ n }]: { n: number }[] = await stack.db.query(
        'SELECT count(*)::int AS n FROM deliberation_events WHERE message_id = $1',
        [id],
      );
      expect(received[i]).toHaveLength(n);
    }
  };

  /** How long a worker process may take to start (the harness's bound). */
  const WORKER_START_MS = PROCESS_START_TIMEOUT_MS;
  /** A spawned worker that never reconciles: it only runs jobs. */
  const NEVER_RECONCILES = { RECONCILE_INTERVAL_MS: '600000', RECONCILE_IDLE_MS: '600000' };
  /** A spawned worker whose only reconcile pass is the one at its start. */
  const ONLY_AT_START = { RECONCILE_INTERVAL_MS: '600000' };

  it('with the worker running on: its periodic reconcile finds the lost work', async () => {
    // Started before Redis is emptied, so its pass at start finds nothing: only the periodic one can.
    const worker = await stack.startWorker();
    try {
      const { messageIds, following, batchId, waiting } = await startWork('running', 50_000);

      expect(await wipeRedis()).toBeGreaterThan(0);
      expect(waiting).toBeGreaterThan(0);
      expect(await unfinished(messageIds, batchId)).toBeGreaterThanOrEqual(2);

      await expectAllFinishedOnce(messageIds, following, batchId);
    } finally {
      // Also when this case failed: a worker left running here would serve (and reconcile) the
      // next case's work, which must have only the worker it kills and the one it starts.
      await stack.stopWorker(worker);
    }
  }, 90_000);

  it(
    'with the worker killed at the same moment: a new worker finds the lost work at start',
    async () => {
      // Started here, not during the case above: there it would take that case's work too.
      const first = await stack.spawnWorker(NEVER_RECONCILES);
      spawned.push(first);
      // The subscribers' wait spans the start of a worker process (up to WORKER_START_MS) besides the
      // work itself (the 50 s of the case above).
      const { messageIds, following, batchId, waiting } = await startWork(
        'restart',
        WORKER_START_MS + 50_000,
      );

      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('exit', resolve));
      expect(await wipeRedis()).toBeGreaterThan(0);
      expect(waiting).toBeGreaterThan(0);
      expect(await stack.queueCounts()).toMatchObject({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
      expect(await unfinished(messageIds, batchId)).toBeGreaterThanOrEqual(2);
      // Work counts as stopped once it has not moved for RECONCILE_IDLE_MS (PostgreSQL's clock, as
      // the reconciler measures it); the only pass of the new worker is at its start, and a worker
      // process can start faster than that.
      await waitFor(
        async () => {
          const [row]: { n: number }[] = await stack.db.query(
            `SELECT count(*)::int AS n FROM messages WHERE role = 'assistant' AND status IN ('queued', 'running')
             AND (id = ANY($1) OR batch_id = $2) AND updated_at >= now() - make_interval(secs => $3::float / 1000)`,
            [messageIds, batchId, Number(stack.env.RECONCILE_IDLE_MS) + 250],
          );
          return row.n === 0;
        },
        20_000,
        'the unfinished work to have been idle for RECONCILE_IDLE_MS',
      );

      const second = await stack.spawnWorker(ONLY_AT_START);
      spawned.push(second);
      await expectAllFinishedOnce(messageIds, following, batchId);
      expect(stack.outputs.get(second)).toMatch(/rescheduled or closed \d+ deliberation/);
      // Two worker processes start in this case (the one it kills and the one that resumes): ts-node
      // compiles each at start, 25 s apiece on a loaded 2-core host.
    },
    90_000 + 2 * WORKER_START_MS,
  );
});

/**
 * Redis restarted empty mid-stage, with the default reconcile settings: work whose job was lost
 * with it is queued again within seconds of Redis's return (not after RECONCILE_IDLE_MS +
 * RECONCILE_INTERVAL_MS), and its subscribers are told; a stage that ran on through the outage is
 * neither run twice nor announced.
 */
describe('Redis restarted empty mid-stage (default settings)', () => {
  let redis: PrivateRedis;
  let stack: TestStack;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    stack = new TestStack({
      REDIS_URL: redis.url,
      // One slot: the first deliberation's stage runs, the second's job waits in Redis.
      WORKER_CONCURRENCY: '1',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    });
    await stack.start();
  }, 60_000);
  afterAll(async () => {
    if (!redis.running) await redis.start();
    await stack?.stop();
    await redis.kill();
  }, 60_000);

  it('the lost work resumes within seconds, said with `resumed`; the running stage is not run twice', async () => {
    const council = (question: string) => ({
      question,
      councilModels: ['sim/a:delay4000@answer', 'sim/b:delay4000@answer'],
      chairmanModel: 'sim/c',
    });
    const running = await stack.deliberate(council('Runs through the outage'));
    const waiting = await stack.deliberate(council('Waits in the queue that is lost'));
    const socket = await stack.connect();
    const receivedAt = new Map<DeliveredEvent, number>();
    socket.onAny((_name: string, event: DeliveredEvent) => receivedAt.set(event, Date.now()));
    const following = [running, waiting].map((m) => stack.follow(m.messageId, { socket, timeoutMs: 90_000 }));
    const statusOf = async (id: string) =>
      ((await stack.db.query('SELECT status FROM messages WHERE id = $1', [id])) as { status: string }[])[0]
        .status;
    const deadline = Date.now() + 20_000;
    while ((await statusOf(running.messageId)) !== 'running') {
      if (Date.now() > deadline) throw new Error('the first deliberation never ran');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await statusOf(waiting.messageId)).toBe('queued');

    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await redis.start();
    const restartedAt = Date.now();

    const [ranOn, resumed] = await Promise.all(following);
    expect(ranOn.at(-1)?.type).toBe('complete');
    expect(resumed.at(-1)?.type).toBe('complete');
    expectContiguous(ranOn);
    expectContiguous(resumed);
    // The waiting one is told, first thing, that it is queued again, and why.
    expect(resumed[0]).toMatchObject({ type: 'resumed', stage: 'stage1', reason: 'queue_lost' });
    expect(resumed.filter((e) => e.type === 'resumed')).toHaveLength(1);
    // Generous on a loaded machine; the benchmark gives the real figure (a few seconds).
    expect((receivedAt.get(resumed[0]) ?? Infinity) - restartedAt).toBeLessThan(20_000);
    // The one whose stage ran on through the outage is not resumed (its calls are not made again).
    expect(ranOn.filter((e) => e.type === 'resumed')).toEqual([]);
    for (const { messageId } of [running, waiting]) {
      const calls: { stage: string; n: number }[] = await stack.db.query(
        `SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 GROUP BY stage ORDER BY stage`,
        [messageId],
      );
      expect(calls).toEqual([
        { stage: 'stage1', n: 2 },
        { stage: 'stage2', n: 2 },
        { stage: 'stage3', n: 1 },
        { stage: 'title', n: 1 },
      ]);
    }
  }, 120_000);
});

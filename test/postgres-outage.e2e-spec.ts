import type { ChildProcess } from 'node:child_process';
import type { DeliveredEvent } from '@conclave/contracts';
import { migrate } from '@conclave/persistence';
import type { Socket } from 'socket.io-client';
import { PrivatePostgres } from './support/private-postgres';
import { TestStack, expectContiguous } from './support/harness';
import { sleep } from './support/wait';

const OUTAGE_MS = 10_000;
/** How long any request may take to be answered while PostgreSQL is away. */
const ANSWER_WITHIN_MS = 5000;

const requests = [
  { question: 'Outage: council, what makes a good API?', councilModels: ['sim/a', 'sim/b', 'sim/c'] },
  {
    question: 'Outage: vote, which editor?',
    mode: 'vote',
    modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
  },
  {
    question: 'Outage: jury',
    mode: 'jury',
    modeConfig: {
      content: 'Water boils at 100 °C at sea level.',
      jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
      foremanModel: 'sim/foreman',
    },
  },
  {
    question: 'Outage: debate, tabs or spaces?',
    mode: 'debate',
    modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
  },
  {
    question: 'Outage: delphi, how many piano tuners in Chicago?',
    mode: 'delphi',
    modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f', maxRounds: 2 },
  },
];

interface Answer {
  status: number;
  retryAfter: string | null;
  body: { statusCode?: number; error?: string; message?: string; [key: string]: unknown } | null;
  ms: number;
}

/** One request with a stopwatch; a request that hangs fails the test instead of stalling it. */
async function timed(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  const text = await response.text();
  let body: Answer['body'] = null;
  try {
    body = text ? (JSON.parse(text) as Answer['body']) : null;
  } catch {
    body = { text };
  }
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body,
    ms: Date.now() - started,
  };
}

const post = (baseUrl: string, path: string, body: unknown) =>
  timed(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/**
 * PostgreSQL, the source of truth, goes away for ten seconds while deliberations and a batch
 * run. It is a private cluster of this test's own: the machine's shared server stays up.
 */
describe('PostgreSQL goes away for ten seconds mid-run', () => {
  let pg: PrivatePostgres | undefined;
  let stack: TestStack;
  let worker: ChildProcess;
  let workerHttp = '';
  let gateway: { child: ChildProcess; baseUrl: string };
  let socket: Socket;

  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    const cluster = pg;
    stack = new TestStack((id) => ({
      DATABASE_URL: cluster.url(`conclave_t_${id}`),
      SIM_LATENCY_MS: '300',
      WORKER_CONCURRENCY: '8',
      // An outage must not spend a stage's attempts: with one, a stage failed by it fails its deliberation.
      STAGE_ATTEMPTS: '1',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_IDLE_MS: '3000',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    }));
    // Processes take seconds to start: they start beside the in-process gateway, once the schema is there.
    await migrate(stack.config.databaseUrl);
    [, worker, gateway] = await Promise.all([
      stack.start({ worker: false }),
      stack.spawnWorker(),
      stack.spawnGateway(),
    ]);
    const port = /"httpPort":(\d+)/.exec(stack.outputs.get(worker) ?? '')?.[1];
    workerHttp = `http://127.0.0.1:${port}`;
    socket = await stack.connect();
  }, 90_000);

  afterAll(async () => {
    try {
      // With PostgreSQL still down (a failed test) the database goes with the cluster.
      await stack?.stop().catch(() => undefined);
    } finally {
      await pg?.destroy();
    }
  }, 60_000);

  const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

  const expectUnavailable = (answer: Answer, what: string) => {
    expect({ what, status: answer.status, fast: answer.ms < ANSWER_WITHIN_MS }).toEqual({
      what,
      status: 503,
      fast: true,
    });
    expect(answer.retryAfter).toBe('5');
    expect(answer.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'Storage is unavailable right now; try again in 5 seconds',
    });
  };

  it('answers 503 with Retry-After while it is away, and finishes every deliberation once it is back', async () => {
    const accepted = await Promise.all(requests.map((body) => stack.deliberate(body)));
    const messageIds = accepted.map((a) => a.messageId);
    const following = messageIds.map((id) => stack.follow(id, { socket, timeoutMs: 55_000 }));
    const batch = await post(gateway.baseUrl, '/api/batches', {
      name: 'outage batch',
      defaults: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
      items: Array.from({ length: 6 }, (_, i) => ({ question: `Outage item ${i}: what is ${i} squared?` })),
      concurrency: 3,
      generateTitles: false,
    });
    expect(batch.status).toBe(202);
    const batchId = String(batch.body?.batchId);

    // Mid-run: stages running, none finished.
    const midRunBy = Date.now() + 20_000;
    for (;;) {
      const [row]: { running: number; done: number }[] = await stack.db.query(
        `SELECT count(*) FILTER (WHERE status = 'running')::int AS running,
           count(*) FILTER (WHERE status IN ('complete', 'failed'))::int AS done
         FROM messages WHERE id = ANY($1)`,
        [messageIds],
      );
      expect(row.done).toBe(0);
      if (row.running >= 3) break;
      if (Date.now() > midRunBy) throw new Error('the deliberations did not start');
      await sleep(50);
    }

    const cluster = pg as PrivatePostgres;
    await cluster.stop();
    const outageStarted = Date.now();
    const gateways = [stack.baseUrl, gateway.baseUrl];
    let rounds = 0;
    while (Date.now() - outageStarted < OUTAGE_MS - 2000 || rounds === 0) {
      rounds += 1;
      for (const baseUrl of gateways) {
        expectUnavailable(
          await post(baseUrl, '/api/deliberations', {
            question: 'During the outage?',
            councilModels: ['sim/a', 'sim/b'],
          }),
          `POST ${baseUrl}/api/deliberations`,
        );
        expectUnavailable(await timed(`${baseUrl}/api/deliberations/${messageIds[0]}`), 'GET deliberation');
        expectUnavailable(await timed(`${baseUrl}/api/conversations`), 'GET conversations');
        expectUnavailable(await timed(`${baseUrl}/api/batches/${batchId}`), 'GET batch');
        const ready = await timed(`${baseUrl}/health/ready`);
        expect(ready).toMatchObject({ status: 503, body: { postgres: 'down', redis: 'up' } });
        expect(ready.ms).toBeLessThan(ANSWER_WITHIN_MS);
      }
      const workerReady = await timed(`${workerHttp}/health/ready`);
      expect(workerReady).toMatchObject({ status: 503, body: { postgres: 'down', redis: 'up' } });
      expect(alive(worker)).toBe(true);
      expect(alive(gateway.child)).toBe(true);
      await sleep(1000);
    }
    expect(rounds).toBeGreaterThan(1);
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStarted)));
    await cluster.start();

    // Every deliberation finishes; the subscriber through the gateway sees each to its end.
    const received: DeliveredEvent[][] = await Promise.all(following);
    received.forEach((events, i) => {
      expectContiguous(events);
      expect(events.at(-1)).toMatchObject({ type: 'complete', messageId: messageIds[i] });
    });

    // The batch finishes too.
    const deadline = Date.now() + 30_000;
    let view = await timed(`${gateway.baseUrl}/api/batches/${batchId}`);
    while (view.body?.status !== 'complete' && Date.now() < deadline) {
      await sleep(200);
      view = await timed(`${gateway.baseUrl}/api/batches/${batchId}`);
    }
    expect(view.body).toMatchObject({ status: 'complete', total: 6, complete: 6, failed: 0 });

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
    // Each stage row once, however often its stage was tried.
    expect(
      await stack.db.query(
        `SELECT message_id, stage_type, model, participant FROM deliberation_stages WHERE message_id = ANY($1)
         GROUP BY message_id, stage_type, model, participant HAVING count(*) > 1`,
        [all],
      ),
    ).toEqual([]);
    // One event per seq, 1..n, and one terminal event, the last.
    for (const id of all) {
      const events: { seq: number; type: string }[] = await stack.db.query(
        'SELECT seq, type FROM deliberation_events WHERE message_id = $1 ORDER BY seq',
        [id],
      );
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'complete' || e.type === 'error').map((e) => e.seq)).toEqual([
        events.length,
      ]);
    }
    for (const [i, id] of messageIds.entries()) {
      const [{ n }]: { n: number }[] = await stack.db.query(
        'SELECT count(*)::int AS n FROM deliberation_events WHERE message_id = $1',
        [id],
      );
      expect(received[i]).toHaveLength(n);
    }

    // Back to normal: ready again, new requests accepted and finished.
    for (const baseUrl of gateways) {
      const ready = await timed(`${baseUrl}/health/ready`);
      expect(ready).toMatchObject({ status: 200, body: { postgres: 'up', redis: 'up' } });
    }
    expect(await timed(`${workerHttp}/health/ready`)).toMatchObject({ status: 200 });
    const after = await post(gateway.baseUrl, '/api/deliberations', {
      question: 'After the outage?',
      councilModels: ['sim/a', 'sim/b'],
    });
    expect(after.status).toBe(202);
    const events = await stack.follow(String(after.body?.messageId), { socket, timeoutMs: 20_000 });
    expect(events.at(-1)?.type).toBe('complete');
    expect(alive(worker)).toBe(true);
    expect(alive(gateway.child)).toBe(true);
    // The stages met the outage and waited for it; none failed because of it.
    const workerLog = stack.outputs.get(worker) ?? '';
    expect(workerLog).toMatch(/storage unavailable, stage waits/);
    expect(workerLog.split('\n').filter((line) => line.includes('job failed'))).toEqual([]);
  }, 120_000);
});

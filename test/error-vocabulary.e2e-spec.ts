import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';
import { PrivatePostgres } from './support/private-postgres';
import { PrivateRedis } from './support/private-redis';
import { until } from './support/wait';

/** What HTTP answered: status, Retry-After and body (an event stream's status only). */
interface HttpAnswer {
  status: number;
  retryAfter: string | null;
  body: { statusCode?: number; message?: string; fields?: Record<string, string> } | null;
}

async function httpAnswer(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 15_000);
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
    });
    const retryAfter = response.headers.get('retry-after');
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      controller.abort();
      return { status: response.status, retryAfter, body: null };
    }
    const text = await response.text();
    return {
      status: response.status,
      retryAfter,
      body: text ? (JSON.parse(text) as HttpAnswer['body']) : null,
    };
  } finally {
    clearTimeout(timer);
  }
}

type Ack = { error?: { statusCode?: number; message?: string; retryAfterSeconds?: number } } & Record<
  string,
  unknown
>;

const ackOf = (socket: Socket, event: string, payload: unknown): Promise<Ack> =>
  socket.timeout(15_000).emitWithAck(event, payload) as Promise<Ack>;

/**
 * The same condition answers the same on both transports: a refusal acks HTTP's status, message
 * and retry hint (Retry-After as `retryAfterSeconds`); what HTTP accepts, the socket accepts.
 */
function expectSameAnswer(what: string, http: HttpAnswer, ack: Ack): void {
  if (http.status < 400) {
    expect({ what, error: ack.error }).toEqual({ what, error: undefined });
    return;
  }
  const expected: Record<string, unknown> = { statusCode: http.status, message: http.body?.message };
  if (http.body?.fields) expected.fields = http.body.fields;
  if (http.retryAfter !== null) expected.retryAfterSeconds = Number(http.retryAfter);
  expect({ what, ack }).toEqual({ what, ack: { error: expected } });
}

const NO_LIMITS = {
  RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
  RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '0',
};
const council = (question: string) => ({ question, councilModels: ['sim/a', 'sim/b'] });

describe('one error vocabulary while PostgreSQL is away', () => {
  let pg: PrivatePostgres | undefined;
  let stack: TestStack;
  let socket: Socket;

  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    const cluster = pg;
    stack = new TestStack((id) => ({ DATABASE_URL: cluster.url(`conclave_t_${id}`), ...NO_LIMITS }));
    // No worker: the deliberations stay queued, to subscribe to and cancel.
    await stack.start({ worker: false });
    socket = await stack.connect();
  }, 90_000);

  afterAll(async () => {
    try {
      if (pg && !(await pg.running())) await pg.start();
      await stack?.stop().catch(() => undefined);
    } finally {
      await pg?.destroy();
    }
  }, 60_000);

  it('acks deliberate, subscribe and cancel with the 503, message and retry hint HTTP answers', async () => {
    const first = await stack.deliberate(council('Before the outage: one?'));
    const second = await stack.deliberate(council('Before the outage: two?'));
    const cluster = pg as PrivatePostgres;
    await cluster.stop();
    try {
      const base = stack.baseUrl;
      const http = {
        deliberate: await httpAnswer(base, 'POST', '/api/deliberations', council('During the outage?')),
        subscribe: await httpAnswer(base, 'GET', `/api/deliberations/${first.messageId}/events`),
        cancel: await httpAnswer(base, 'POST', `/api/deliberations/${first.messageId}/cancel`),
      };
      for (const [what, answer] of Object.entries(http)) {
        expect({ what, status: answer.status, retryAfter: answer.retryAfter }).toEqual({
          what,
          status: 503,
          retryAfter: '5',
        });
        expect(answer.body?.message).toBe('Storage is unavailable right now; try again in 5 seconds');
      }
      expectSameAnswer(
        'deliberate',
        http.deliberate,
        await ackOf(socket, 'deliberate', council('During the outage?')),
      );
      expectSameAnswer(
        'subscribe',
        http.subscribe,
        await ackOf(socket, 'subscribe', { messageId: second.messageId }),
      );
      expectSameAnswer('cancel', http.cancel, await ackOf(socket, 'cancel', { messageId: second.messageId }));
    } finally {
      await cluster.start();
    }
    // Back: the same socket's messages work again.
    await until(
      async () => {
        const ack = await ackOf(socket, 'cancel', { messageId: second.messageId });
        return ack.error?.statusCode !== 503;
      },
      'the cancel to go through',
      30_000,
    );
    expect(await ackOf(socket, 'subscribe', { messageId: second.messageId })).toEqual({ ok: true });
  }, 120_000);
});

describe('one error vocabulary, and one admission rule, while Redis is away', () => {
  let redis: PrivateRedis;
  let stack: TestStack;
  let socket: Socket;

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    stack = new TestStack({ REDIS_URL: redis.url, ...NO_LIMITS });
    await stack.start({ worker: false });
    socket = await stack.connect();
  }, 60_000);

  afterAll(async () => {
    // Back (empty) so the stack can clean up its keys.
    if (!redis.running) await redis.start();
    await stack?.stop();
    await redis.kill();
  }, 60_000);

  const readiness = async () => (await fetch(`${stack.baseUrl}/health/ready`)).status;
  const count = async (sql: string): Promise<number> => ((await stack.db.query(sql)) as { n: number }[])[0].n;
  const stored = async () => ({
    batches: await count('SELECT count(*)::int AS n FROM batches'),
    conversations: await count('SELECT count(*)::int AS n FROM conversations'),
    messages: await count('SELECT count(*)::int AS n FROM messages'),
    idempotencyKeys: await count('SELECT count(*)::int AS n FROM idempotency_keys'),
  });
  const batch = {
    name: 'while Redis is away',
    defaults: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
    items: [{ question: 'Item one?' }, { question: 'Item two?' }, { question: 'Item three?' }],
    concurrency: 2,
    generateTitles: false,
  };

  it('acks deliberate, subscribe and cancel as HTTP answers them', async () => {
    const [first, second] = [
      await stack.deliberate(council('Before Redis goes: one?')),
      await stack.deliberate(council('Before Redis goes: two?')),
    ];
    await redis.kill();
    await until(async () => (await readiness()) === 503, 'readiness to say Redis is down', 30_000);

    const base = stack.baseUrl;
    const deliberate = await httpAnswer(base, 'POST', '/api/deliberations', council('While Redis is away?'));
    expect({ status: deliberate.status, retryAfter: deliberate.retryAfter }).toEqual({
      status: 503,
      retryAfter: '5',
    });
    expect(deliberate.body?.message).toBe(
      'The job queue is unavailable right now; nothing was started. Please retry.',
    );
    expectSameAnswer(
      'deliberate',
      deliberate,
      await ackOf(socket, 'deliberate', council('While Redis is away?')),
    );
    expectSameAnswer(
      'subscribe',
      await httpAnswer(base, 'GET', `/api/deliberations/${first.messageId}/events`),
      await ackOf(socket, 'subscribe', { messageId: second.messageId }),
    );
    expectSameAnswer(
      'cancel',
      await httpAnswer(base, 'POST', `/api/deliberations/${first.messageId}/cancel`),
      await ackOf(socket, 'cancel', { messageId: second.messageId }),
    );
  }, 90_000);

  it('refuses a batch as it refuses a single deliberation, keeping nothing of it, and takes it once Redis is back', async () => {
    const base = stack.baseUrl;
    if (redis.running) await redis.kill();
    await until(async () => (await readiness()) === 503, 'readiness to say Redis is down', 30_000);
    const before = await stored();
    const deliberate = await httpAnswer(base, 'POST', '/api/deliberations', council('While Redis is away?'));
    expect(deliberate.status).toBe(503);
    // Refused as the single deliberation was, and nothing of it kept (its idempotency key neither).
    const refused = await httpAnswer(base, 'POST', '/api/batches', batch, { 'idempotency-key': 'batch-1' });
    expect({ status: refused.status, retryAfter: refused.retryAfter, body: refused.body }).toEqual({
      status: 503,
      retryAfter: '5',
      body: deliberate.body,
    });
    expect(await stored()).toEqual(before);

    // Redis back: the same submission, with the same key, is accepted as a new batch.
    await redis.start();
    await until(async () => (await readiness()) === 200, 'readiness to say Redis is up', 30_000);
    await until(
      async () => {
        const accepted = await httpAnswer(base, 'POST', '/api/batches', batch, {
          'idempotency-key': 'batch-1',
        });
        if (accepted.status === 202) {
          expect(accepted.body).toMatchObject({ total: 3, status: 'queued' });
          return true;
        }
        expect(accepted.status).toBe(503);
        return false;
      },
      'the queue to take work again',
      30_000,
    );
    expect(await stored()).toMatchObject({
      batches: before.batches + 1,
      conversations: before.conversations + 3,
    });
  }, 90_000);
});

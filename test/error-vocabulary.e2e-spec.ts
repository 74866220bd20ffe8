import IORedis from 'ioredis';
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

  it('answers MCP tool calls and resource reads with the words and retry hint HTTP gives', async () => {
    const kept = await stack.deliberate(council('Read over MCP during the outage?'));
    const mcp = async (body: unknown) => {
      const response = await fetch(`${stack.baseUrl}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      const data = text.split('\n').find((line) => line.startsWith('data: '));
      return {
        status: response.status,
        message: JSON.parse(data ? data.slice(6) : text) as Record<string, unknown>,
      };
    };
    const cluster = pg as PrivatePostgres;
    await cluster.stop();
    try {
      const tool = await mcp({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_deliberation', arguments: { messageId: kept.messageId, waitSeconds: 0 } },
      });
      expect(tool).toEqual({
        status: 200,
        message: expect.objectContaining({
          result: expect.objectContaining({
            isError: true,
            content: [{ type: 'text', text: 'Storage is unavailable right now; try again in 5 seconds.' }],
          }) as unknown,
        }) as unknown,
      });
      const resource = await mcp({
        jsonrpc: '2.0',
        id: 2,
        method: 'resources/read',
        params: { uri: `conclave://deliberations/${kept.messageId}` },
      });
      expect(resource.message.error).toEqual({
        code: -32603,
        // The SDK puts "MCP error <code>: " before an McpError's message.
        message: 'MCP error -32603: Storage is unavailable right now; try again in 5 seconds',
        data: { statusCode: 503, retryAfterSeconds: 5 },
      });
    } finally {
      await cluster.start();
    }
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

  const turnsOf = (question: string) =>
    count(`SELECT count(*)::int AS n FROM messages WHERE role = 'user' AND content = '${question}'`);

  it('answers a socket deliberate retried with its idempotency key with the deliberation it started, as HTTP does', async () => {
    const request = council('Started once, asked twice?');
    const first = await ackOf(socket, 'deliberate', { ...request, idempotencyKey: 'socket-key-1' });
    expect(first).toEqual({
      conversationId: expect.any(String) as string,
      messageId: expect.any(String) as string,
    });
    // Its retry (an ack lost, a 503 that kept the turn): the same deliberation, no second one.
    expect(await ackOf(socket, 'deliberate', { ...request, idempotencyKey: 'socket-key-1' })).toEqual(first);
    // One mechanism: HTTP's Idempotency-Key with the same key and request answers it too.
    const http = await httpAnswer(stack.baseUrl, 'POST', '/api/deliberations', request, {
      'idempotency-key': 'socket-key-1',
    });
    expect({ status: http.status, body: http.body }).toEqual({ status: 202, body: first });
    expect(await turnsOf(request.question)).toBe(1);
    // Checked as HTTP checks it: the key with another request, a malformed key.
    expect(
      await ackOf(socket, 'deliberate', { ...council('Another question?'), idempotencyKey: 'socket-key-1' }),
    ).toEqual({
      error: { statusCode: 422, message: 'This Idempotency-Key was already used with a different request' },
    });
    for (const idempotencyKey of ['', 'with space', 42, 'x'.repeat(256)]) {
      expect(await ackOf(socket, 'deliberate', { ...request, idempotencyKey })).toMatchObject({
        error: { statusCode: 400, fields: { idempotencyKey: 'must be 1 to 255 visible ASCII characters' } },
      });
    }
    expect(await turnsOf(request.question)).toBe(1);
    expect(await turnsOf('Another question?')).toBe(0);
  }, 60_000);

  /** Two submissions with one key, held where the key is recorded, then let go together. */
  async function twinSubmissions(key: string): Promise<HttpAnswer[]> {
    const holder = stack.db.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query('LOCK TABLE idempotency_keys IN SHARE MODE');
      const submit = () =>
        httpAnswer(stack.baseUrl, 'POST', '/api/batches', batch, { 'idempotency-key': key });
      const pending = Promise.all([submit(), submit()]);
      await until(async () => {
        const [{ n }] = (await stack.db.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
           WHERE NOT l.granted AND c.relname = 'idempotency_keys'`,
        )) as { n: number }[];
        return n >= 2;
      }, 'both submissions to wait on the key');
      await holder.commitTransaction();
      return await pending;
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  }

  it('answers twin batch submissions with one key with one batch, the other taken back', async () => {
    const before = await stored();
    const answers = await twinSubmissions('batch-twin-up');
    expect(answers.map((a) => a.status)).toEqual([202, 202]);
    expect(answers[1].body).toEqual(answers[0].body);
    expect(await stored()).toEqual({
      batches: before.batches + 1,
      conversations: before.conversations + 3,
      messages: before.messages + 6,
      idempotencyKeys: before.idempotencyKeys + 1,
    });
  }, 60_000);

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

  it('keeps a batch it could not take back, and says so with a 202 (the reconciler starts it), not a 5xx', async () => {
    const base = stack.baseUrl;
    if (redis.running) await redis.kill();
    await until(async () => (await readiness()) === 503, 'readiness to say Redis is down');
    // The take-back fails (as when PostgreSQL goes too): the batch stays stored and will run, so
    // the client must not be told that nothing was started.
    await stack.db.query(`CREATE FUNCTION review_no_batch_delete() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'deletes refused by the test'; END $$`);
    await stack.db.query(`CREATE TRIGGER review_no_batch_delete BEFORE DELETE ON batches
      FOR EACH ROW EXECUTE FUNCTION review_no_batch_delete()`);
    try {
      const before = await stored();
      const answer = await httpAnswer(base, 'POST', '/api/batches', batch, {
        'idempotency-key': 'batch-kept',
      });
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 202,
        body: { batchId: expect.any(String) as string, total: 3, status: 'queued' },
      });
      expect(await stored()).toMatchObject({
        batches: before.batches + 1,
        idempotencyKeys: before.idempotencyKeys + 1,
      });
    } finally {
      await stack.db.query('DROP TRIGGER review_no_batch_delete ON batches');
      await stack.db.query('DROP FUNCTION review_no_batch_delete()');
    }
  }, 90_000);

  it('accepts a deliberation it could not take back (the reconciler runs it), and its retry answers that one', async () => {
    if (redis.running) await redis.kill();
    await until(async () => (await readiness()) === 503, 'readiness to say Redis is down');
    await stack.db.query(`CREATE FUNCTION review_no_conversation_delete() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'deletes refused by the test'; END $$`);
    await stack.db.query(`CREATE TRIGGER review_no_conversation_delete BEFORE DELETE ON conversations
      FOR EACH ROW EXECUTE FUNCTION review_no_conversation_delete()`);
    try {
      const request = council('Kept while Redis is away?');
      const ack = await ackOf(socket, 'deliberate', { ...request, idempotencyKey: 'kept-turn' });
      // Stored and to be run: not a 503 that invites a retry starting a second one.
      expect(ack).toEqual({
        conversationId: expect.any(String) as string,
        messageId: expect.any(String) as string,
      });
      expect(await ackOf(socket, 'deliberate', { ...request, idempotencyKey: 'kept-turn' })).toEqual(ack);
      const http = await httpAnswer(stack.baseUrl, 'POST', '/api/deliberations', council('Kept over HTTP?'));
      expect({ status: http.status, body: http.body }).toEqual({
        status: 202,
        body: { conversationId: expect.any(String) as string, messageId: expect.any(String) as string },
      });
      expect(await turnsOf(request.question)).toBe(1);
    } finally {
      await stack.db.query('DROP TRIGGER review_no_conversation_delete ON conversations');
      await stack.db.query('DROP FUNCTION review_no_conversation_delete()');
    }
  }, 90_000);

  it('never answers a twin request with a batch that is then taken back', async () => {
    if (redis.running) await redis.kill();
    await until(async () => (await readiness()) === 503, 'readiness to say Redis is down');
    const before = await stored();
    // Both held where the key is recorded: one is admitted first, fails to enqueue and is taken
    // back while the other waits on its key.
    const answers = await twinSubmissions('batch-twin');
    expect(answers.map((a) => ({ status: a.status, retryAfter: a.retryAfter }))).toEqual([
      { status: 503, retryAfter: '5' },
      { status: 503, retryAfter: '5' },
    ]);
    expect(await stored()).toEqual(before);
  }, 90_000);
});

describe('a batch refused while the queue is away gives back its hourly items', () => {
  let redis: PrivateRedis;
  let admin: IORedis;
  let stack: TestStack;

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    admin = new IORedis(redis.port, '127.0.0.1');
    stack = new TestStack({ REDIS_URL: redis.url, ...NO_LIMITS, RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '3' });
    await stack.start({ worker: false });
  }, 60_000);

  afterAll(async () => {
    await admin.call('ACL', 'SETUSER', 'default', 'allkeys').catch(() => undefined);
    admin.disconnect();
    await stack?.stop();
    await redis.kill();
  }, 60_000);

  it('lets the same 3 items in once the queue is back, where their first count would refuse them', async () => {
    const base = stack.baseUrl;
    const batch = {
      name: 'refused, then accepted',
      defaults: { councilModels: ['sim/a', 'sim/b'] },
      items: [{ question: 'One?' }, { question: 'Two?' }, { question: 'Three?' }],
    };
    // Redis counts (its rate-limit keys answer) but the queue refuses the batch's jobs.
    const prefix = stack.config.redisPrefix;
    await admin.call('ACL', 'SETUSER', 'default', 'resetkeys', `~${prefix}:ratelimit:*`);
    let refused: HttpAnswer;
    try {
      refused = await httpAnswer(base, 'POST', '/api/batches', batch);
    } finally {
      await admin.call('ACL', 'SETUSER', 'default', 'allkeys');
    }
    expect({ status: refused.status, retryAfter: refused.retryAfter }).toEqual({
      status: 503,
      retryAfter: '5',
    });
    // The 3 items were given back: the resubmission fits in the hour's 3.
    let accepted: HttpAnswer | undefined;
    await until(async () => {
      accepted = await httpAnswer(base, 'POST', '/api/batches', batch);
      return accepted.status !== 503;
    }, 'the resubmission to be answered');
    expect({ status: accepted?.status, body: accepted?.body }).toEqual({
      status: 202,
      body: { batchId: expect.any(String) as string, total: 3, status: 'queued' },
    });
    // And the hour's count holds them: a fourth item is refused.
    const more = await httpAnswer(base, 'POST', '/api/batches', { ...batch, items: [{ question: 'Four?' }] });
    expect(more.status).toBe(429);
  }, 90_000);
});

describe("a retry of a batch's failed items while Redis is away", () => {
  let redis: PrivateRedis;
  let stack: TestStack;

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    stack = new TestStack({ REDIS_URL: redis.url, ...NO_LIMITS });
    await stack.start();
  }, 60_000);

  afterAll(async () => {
    if (!redis.running) await redis.start();
    await stack?.stop();
    await redis.kill();
  }, 60_000);

  const readiness = async () => (await fetch(`${stack.baseUrl}/health/ready`)).status;
  interface View {
    status: string;
    failed: number;
    retriedItems: number;
    finishedAt: string | null;
  }
  const viewOf = async (batchId: string) =>
    (await httpAnswer(stack.baseUrl, 'GET', `/api/batches/${batchId}`)).body as unknown as View;
  const rowsOf = async (batchId: string) => ({
    batch: await stack.db.query(`SELECT status, finished_at, api_key_id FROM batches WHERE id = $1`, [
      batchId,
    ]),
    items: await stack.db.query(
      `SELECT id, status, attempt, superseded_at, dispatched_at FROM messages
       WHERE batch_id = $1 AND role = 'assistant' ORDER BY id`,
      [batchId],
    ),
    conversations: await stack.db.query(`SELECT count(*)::int AS n FROM conversations`),
  });

  it('refuses it as it refuses a new batch, leaving the batch as it was, and takes it once Redis is back', async () => {
    const base = stack.baseUrl;
    const batch = {
      name: 'retried while Redis is away',
      defaults: { councilModels: ['sim/a:fail', 'sim/b:fail'], chairmanModel: 'sim/c' },
      items: [{ question: 'Fails once?' }, { question: 'Fails twice?' }],
      generateTitles: false,
    };
    const submitted = await httpAnswer(base, 'POST', '/api/batches', batch);
    expect(submitted.status).toBe(202);
    const { batchId } = submitted.body as unknown as { batchId: string };
    await until(async () => (await viewOf(batchId)).finishedAt !== null, 'the batch to finish', 60_000);
    expect(await viewOf(batchId)).toMatchObject({ failed: 2, retriedItems: 0 });
    const before = await rowsOf(batchId);

    await redis.kill();
    await until(async () => (await readiness()) === 503, 'readiness to say Redis is down', 30_000);
    const newBatch = await httpAnswer(base, 'POST', '/api/batches', batch);
    expect(newBatch.status).toBe(503);
    const retry = await httpAnswer(base, 'POST', `/api/batches/${batchId}/retry-failed`);
    expect({ status: retry.status, retryAfter: retry.retryAfter, body: retry.body }).toEqual({
      status: 503,
      retryAfter: '5',
      body: newBatch.body,
    });
    // Nothing of the retry was kept: its failed items are still failed, the batch still finished.
    expect(await rowsOf(batchId)).toEqual(before);
    expect(await viewOf(batchId)).toMatchObject({ failed: 2, retriedItems: 0 });

    // Redis back: the same request is accepted, and the items run again (failing again).
    await redis.start();
    await until(async () => (await readiness()) === 200, 'readiness to say Redis is up', 30_000);
    await until(
      async () => {
        const accepted = await httpAnswer(base, 'POST', `/api/batches/${batchId}/retry-failed`);
        if (accepted.status === 202) {
          expect(accepted.body).toEqual({ batchId, retried: 2, status: 'running' });
          return true;
        }
        expect(accepted.status).toBe(503);
        return false;
      },
      'the queue to take work again',
      30_000,
    );
    await until(
      async () => {
        const view = await viewOf(batchId);
        return view.finishedAt !== null && view.retriedItems === 2;
      },
      'the retried items to run',
      60_000,
    );
    expect(await viewOf(batchId)).toMatchObject({ failed: 2, retriedItems: 2 });
  }, 180_000);
});

describe('a retry refused while the queue is away gives back its hourly items', () => {
  let redis: PrivateRedis;
  let admin: IORedis;
  let stack: TestStack;

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    admin = new IORedis(redis.port, '127.0.0.1');
    stack = new TestStack({ REDIS_URL: redis.url, ...NO_LIMITS, RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '3' });
    await stack.start({ worker: false });
  }, 60_000);

  afterAll(async () => {
    await admin.call('ACL', 'SETUSER', 'default', 'allkeys').catch(() => undefined);
    admin.disconnect();
    await stack?.stop();
    await redis.kill();
  }, 60_000);

  it('lets 2 more items in once the queue is back, where the refused retry counted would refuse them', async () => {
    const base = stack.baseUrl;
    const items = (n: number) => ({
      defaults: { councilModels: ['sim/a', 'sim/b'] },
      items: Array.from({ length: n }, (_, i) => ({ question: `Item ${i}?` })),
    });
    const submitted = await httpAnswer(base, 'POST', '/api/batches', items(1));
    expect(submitted.status).toBe(202);
    const { batchId } = submitted.body as unknown as { batchId: string };
    // Its one item failed and the batch finished (no worker here: as a worker would leave them).
    await stack.db.query(
      `UPDATE messages SET status = 'failed', error = 'failed by the test' WHERE batch_id = $1 AND role = 'assistant'`,
      [batchId],
    );
    await stack.db.query(`UPDATE batches SET status = 'complete', finished_at = now() WHERE id = $1`, [
      batchId,
    ]);

    // Redis counts (its rate-limit keys answer) but the queue refuses the retry's jobs.
    const prefix = stack.config.redisPrefix;
    await admin.call('ACL', 'SETUSER', 'default', 'resetkeys', `~${prefix}:ratelimit:*`);
    let refused: HttpAnswer;
    try {
      refused = await httpAnswer(base, 'POST', `/api/batches/${batchId}/retry-failed`);
    } finally {
      await admin.call('ACL', 'SETUSER', 'default', 'allkeys');
    }
    expect({ status: refused.status, retryAfter: refused.retryAfter }).toEqual({
      status: 503,
      retryAfter: '5',
    });
    const [{ attempts }]: { attempts: number }[] = await stack.db.query(
      `SELECT count(*)::int AS attempts FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
      [batchId],
    );
    expect(attempts).toBe(1);
    // The retry's item was given back: 1 used, so 2 more fit in the hour's 3.
    let accepted: HttpAnswer | undefined;
    await until(async () => {
      accepted = await httpAnswer(base, 'POST', '/api/batches', items(2));
      return accepted.status !== 503;
    }, 'the submission to be answered');
    expect(accepted?.status).toBe(202);
    expect((await httpAnswer(base, 'POST', '/api/batches', items(1))).status).toBe(429);
  }, 90_000);
});

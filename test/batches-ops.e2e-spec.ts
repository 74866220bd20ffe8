import type { BatchAccepted, BatchResultLine, BatchView, DeliveredEvent } from '@conclave/contracts';
import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';
import { until } from './support/wait';

function batchComplete(socket: Socket, batchId: string, timeoutMs = 120_000): Promise<BatchView> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`batch ${batchId} did not finish`)), timeoutMs);
    socket.on('batch_complete', (view: BatchView) => {
      if (view.batchId !== batchId) return;
      clearTimeout(timer);
      resolve(view);
    });
    void socket.emitWithAck('subscribe', { batchId });
  });
}

describe('batch operations', () => {
  const stack = new TestStack({ SIM_LATENCY_MS: '40' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const submit = (body: unknown, headers: Record<string, string> = {}) =>
    stack.api<BatchAccepted & { message?: string; fields?: Record<string, string> }>('POST', '/api/batches', {
      body,
      headers,
    });
  const council = (n: number) => Array.from({ length: n }, (_, i) => ({ question: `Question ${i}?` }));
  const defaults = { mode: 'council', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' };

  it('accepts CSV and JSONL uploads with defaults from the query', async () => {
    const csv =
      'question,content,originalQuestion\nEvaluate A,"The sky is blue, mostly.",Why is the sky blue?\nEvaluate B,Water is wet.,\n';
    const jury = { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/f' };
    const fromCsv = await stack.api<BatchAccepted>(
      'POST',
      `/api/batches?mode=jury&name=csv&defaults=${encodeURIComponent(JSON.stringify({ modeConfig: jury }))}`,
      {
        raw: csv,
        headers: { 'content-type': 'text/csv' },
      },
    );
    expect(fromCsv.status).toBe(202);
    expect(fromCsv.body.total).toBe(2);
    const jsonl = ['{"question":"One?"}', '', '{"question":"Two?","councilModels":["sim/x","sim/y"]}'].join(
      '\n',
    );
    const fromJsonl = await stack.api<BatchAccepted>(
      'POST',
      `/api/batches?defaults=${encodeURIComponent(JSON.stringify(defaults))}`,
      { raw: jsonl, headers: { 'content-type': 'application/x-ndjson' } },
    );
    expect(fromJsonl.status).toBe(202);
    const socket = await stack.connect();
    await batchComplete(socket, fromCsv.body.batchId);
    await batchComplete(socket, fromJsonl.body.batchId);
    const lines = (await (await fetch(`${stack.baseUrl}/api/batches/${fromCsv.body.batchId}/results`)).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as BatchResultLine);
    expect(lines.map((l) => [l.mode, l.status, l.question, l.content])).toEqual([
      ['jury', 'complete', 'Evaluate A', 'The sky is blue, mostly.'],
      ['jury', 'complete', 'Evaluate B', 'Water is wet.'],
    ]);
    const jsonlLines = (
      await (await fetch(`${stack.baseUrl}/api/batches/${fromJsonl.body.batchId}/results`)).text()
    )
      .trim()
      .split('\n');
    expect(jsonlLines).toHaveLength(2);
    const list = await stack.api<BatchView[]>('GET', '/api/batches');
    expect(list.body.map((b) => b.batchId)).toEqual(
      expect.arrayContaining([fromCsv.body.batchId, fromJsonl.body.batchId]),
    );
    const bad = await stack.api<{ fields: Record<string, string> }>('POST', '/api/batches', {
      raw: 'question,colour\nx,red\n',
      headers: { 'content-type': 'text/csv' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.fields.body).toMatch(/unknown CSV column\(s\) colour/);
  });

  it('cancel mid-batch: queued and running items stop at once, and it exports', async () => {
    const accepted = await submit({ defaults, items: council(40), concurrency: 3 });
    const socket = await stack.connect();
    const finished = batchComplete(socket, accepted.body.batchId);
    let maxInFlight = 0;
    await until(async () => {
      const [{ inflight, complete }] = await stack.db.query(
        `SELECT COUNT(*) FILTER (WHERE dispatched_at IS NOT NULL AND status IN ('queued','running'))::int AS inflight,
                COUNT(*) FILTER (WHERE status = 'complete')::int AS complete
         FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
        [accepted.body.batchId],
      );
      maxInFlight = Math.max(maxInFlight, inflight);
      return complete >= 4;
    });
    // Someone watching the last item, which has not started: its stop reaches them as any stop does.
    const [{ id: lastItem }]: { id: string }[] = await stack.db.query(
      `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND batch_index = 39`,
      [accepted.body.batchId],
    );
    const watched: DeliveredEvent[] = [];
    const ended = new Promise<void>((resolve) =>
      socket.on('cancelled', (event: DeliveredEvent) => {
        if (event.messageId !== lastItem) return;
        watched.push(event);
        resolve();
      }),
    );
    expect(await socket.emitWithAck('subscribe', { messageId: lastItem, afterSeq: 0 })).toMatchObject({
      ok: true,
    });
    const cancelled = await stack.api<BatchView>('POST', `/api/batches/${accepted.body.batchId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.queued).toBe(0);
    expect(cancelled.body.cancelled).toBeGreaterThan(20);
    await ended;
    expect(watched).toEqual([
      expect.objectContaining({ type: 'cancelled', seq: 1, reason: 'The batch was cancelled.' }),
    ]);
    // Stored, so a later subscriber replays the same end.
    expect(await stack.follow(lastItem)).toEqual(watched);
    const done = await finished;
    expect(done).toMatchObject({ status: 'cancelled', queued: 0, running: 0 });
    expect(done.complete + done.failed + done.cancelled).toBe(40);
    expect(maxInFlight).toBeLessThanOrEqual(3);
    const lines = (
      await (await fetch(`${stack.baseUrl}/api/batches/${accepted.body.batchId}/results`)).text()
    )
      .trim()
      .split('\n');
    expect(lines).toHaveLength(40);
    expect(
      lines.map((l) => (JSON.parse(l) as BatchResultLine).status).filter((s) => s === 'cancelled'),
    ).toHaveLength(done.cancelled);
    // cancelling twice changes nothing
    expect(
      (await stack.api<BatchView>('POST', `/api/batches/${accepted.body.batchId}/cancel`)).body.cancelled,
    ).toBe(done.cancelled);
  });

  it('a repeated submit with the same Idempotency-Key returns the same batch', async () => {
    const body = { defaults, items: council(3) };
    const first = await submit(body, { 'idempotency-key': 'batch-key-1' });
    const again = await submit(body, { 'idempotency-key': 'batch-key-1' });
    expect(again.status).toBe(202);
    expect(again.body.batchId).toBe(first.body.batchId);
    const [{ n }] = await stack.db.query('SELECT COUNT(*)::int AS n FROM messages WHERE batch_id = $1', [
      first.body.batchId,
    ]);
    expect(n).toBe(3);
    const different = await submit({ ...body, name: 'changed' }, { 'idempotency-key': 'batch-key-1' });
    expect(different.status).toBe(422);
    const [{ batches }] = await stack.db.query(
      `SELECT COUNT(*)::int AS batches FROM idempotency_keys WHERE key = 'batch-key-1'`,
    );
    expect(batches).toBe(1);
  });

  it('the same Idempotency-Key works on POST /api/deliberations', async () => {
    const body = { question: 'Once only?', councilModels: ['sim/a', 'sim/b'] };
    const headers = { 'idempotency-key': 'ask-key-1' };
    const [first, second] = await Promise.all([
      stack.api<{ messageId: string }>('POST', '/api/deliberations', { body, headers }),
      stack.api<{ messageId: string }>('POST', '/api/deliberations', { body, headers }),
    ]);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body.messageId).toBe(first.body.messageId);
    const [{ n }] = await stack.db.query(
      `SELECT COUNT(*)::int AS n FROM messages WHERE content = 'Once only?'`,
    );
    expect(n).toBe(1);
  });

  it('refuses bad envelopes and unknown batches', async () => {
    expect((await submit({ items: [] })).body.fields).toEqual({ items: 'items must be a non-empty array' });
    expect((await submit({ items: council(1), concurrency: 0 })).body.fields).toEqual({
      concurrency: 'concurrency must be a whole number from 1 to 100',
    });
    expect((await submit({ items: council(10_001) })).body.fields?.items).toMatch(/at most 10000 items/);
    expect((await stack.api('GET', '/api/batches/11111111-1111-4111-8111-111111111111')).status).toBe(404);
    expect((await stack.api('GET', '/api/batches/nope/results')).status).toBe(404);
    const socket = await stack.connect();
    expect(
      await socket.emitWithAck('subscribe', { batchId: '11111111-1111-4111-8111-111111111111' }),
    ).toMatchObject({
      error: { message: expect.stringContaining('not found') },
    });
  });
});

describe('batch items run behind interactive deliberations', () => {
  const stack = new TestStack({ SIM_LATENCY_MS: '60', WORKER_CONCURRENCY: '2' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('a single deliberation submitted during a large batch starts before its queued items', async () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ question: `Batch question ${i}?` }));
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        defaults: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
        items,
        concurrency: 50,
      },
    });
    await until(async () => {
      const [{ n }] = await stack.db.query(
        `SELECT COUNT(*)::int AS n FROM messages WHERE batch_id = $1 AND status = 'complete'`,
        [accepted.body.batchId],
      );
      return n >= 2;
    });
    const counts = await stack.queueCounts();
    expect(counts.prioritized).toBeGreaterThan(10); // batch jobs waiting for a worker slot
    const submittedAt = new Date();
    const { events } = await stack.run({ question: 'Me first?', councilModels: ['sim/a', 'sim/b'] });
    const mine = new Date((events.find((e) => e.type === 'stage1_start') as DeliveredEvent).at);
    // Batch stages that started between the submit and the interactive one's start: at most the
    // worker slots that happened to free up in that instant, never the queue in front of it.
    const [{ overtaken }] = await stack.db.query(
      `SELECT COUNT(*)::int AS overtaken FROM deliberation_events e JOIN messages m ON m.id = e.message_id
       WHERE m.batch_id = $1 AND e.type IN ('stage1_start', 'stage2_start', 'stage3_start')
         AND e.created_at > $2 AND e.created_at < $3`,
      [accepted.body.batchId, submittedAt, mine],
    );
    expect(overtaken).toBeLessThanOrEqual(2);
    expect(events.at(-1)?.type).toBe('complete');
    await stack.api('POST', `/api/batches/${accepted.body.batchId}/cancel`);
  }, 120_000);
});

describe('a worker killed mid-batch', () => {
  const stack = new TestStack({
    WORKER_LOCK_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    RECONCILE_INTERVAL_MS: '500',
    RECONCILE_IDLE_MS: '1000',
  });
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  it('loses and duplicates nothing', async () => {
    const first = await stack.spawnWorker();
    const items = Array.from({ length: 40 }, (_, i) => ({ question: `Crash question ${i}?` }));
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        defaults: { councilModels: ['sim/a:delay150@answer', 'sim/b'], chairmanModel: 'sim/c' },
        items,
        concurrency: 8,
      },
    });
    const socket = await stack.connect();
    const finished = batchComplete(socket, accepted.body.batchId, 120_000);
    await until(async () => {
      const [{ n }] = await stack.db.query(
        `SELECT COUNT(*)::int AS n FROM messages WHERE batch_id = $1 AND status = 'complete'`,
        [accepted.body.batchId],
      );
      return n >= 5;
    });
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    await stack.spawnWorker();
    const done = await finished;
    expect(done).toMatchObject({ status: 'complete', complete: 40, failed: 0, queued: 0, running: 0 });

    const perMessage: { id: string; rows: number; events: number; maxseq: number; distinct: number }[] =
      await stack.db.query(
        `SELECT m.id,
         (SELECT COUNT(*)::int FROM deliberation_stages s WHERE s.message_id = m.id) AS rows,
         (SELECT COUNT(*)::int FROM deliberation_events e WHERE e.message_id = m.id) AS events,
         (SELECT MAX(seq) FROM deliberation_events e WHERE e.message_id = m.id) AS maxseq,
         (SELECT COUNT(DISTINCT e.type || e.event_key)::int FROM deliberation_events e WHERE e.message_id = m.id) AS distinct
       FROM messages m WHERE m.batch_id = $1`,
        [accepted.body.batchId],
      );
    expect(perMessage).toHaveLength(40);
    for (const m of perMessage) {
      // 2 answers, the label map, 2 rankings, the aggregate and the synthesis: each exactly once
      expect(m.rows).toBe(7);
      expect(m.maxseq).toBe(m.events);
      expect(m.distinct).toBe(m.events);
    }
    const lines = (
      await (await fetch(`${stack.baseUrl}/api/batches/${accepted.body.batchId}/results`)).text()
    )
      .trim()
      .split('\n');
    expect(lines).toHaveLength(40);
  }, 150_000);
});

describe('batches of two users share the workers', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey', SIM_LATENCY_MS: '30', WORKER_CONCURRENCY: '4' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('runs both at once, each within its own concurrency', async () => {
    const [ann, ben] = [await stack.createUser('ann'), await stack.createUser('ben')];
    const body = (who: string) => ({
      defaults: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
      items: Array.from({ length: 30 }, (_, i) => ({ question: `${who} ${i}?` })),
      concurrency: 4,
    });
    const a = await stack.api<BatchAccepted>('POST', '/api/batches', { body: body('ann'), token: ann });
    const b = await stack.api<BatchAccepted>('POST', '/api/batches', { body: body('ben'), token: ben });
    const progress = async (batchId: string) => {
      const [{ n }] = await stack.db.query(
        `SELECT COUNT(*)::int AS n FROM messages WHERE batch_id = $1 AND status = 'complete'`,
        [batchId],
      );
      return n as number;
    };
    await until(async () => (await progress(a.body.batchId)) >= 8);
    // the second batch is not starved behind the first
    expect(await progress(b.body.batchId)).toBeGreaterThanOrEqual(3);
    // and neither sees the other's batch
    expect((await stack.api('GET', `/api/batches/${a.body.batchId}`, { token: ben })).status).toBe(404);
    await stack.api('POST', `/api/batches/${a.body.batchId}/cancel`, { token: ann });
    await stack.api('POST', `/api/batches/${b.body.batchId}/cancel`, { token: ben });
  }, 60_000);

  it('accepts 10 000 items in one submit', async () => {
    const key = await stack.createUser('carl');
    const items = Array.from({ length: 10_000 }, (_, i) => ({ question: `Item ${i}?` }));
    const started = Date.now();
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: { defaults: { councilModels: ['sim/a', 'sim/b'] }, items },
      token: key,
    });
    const tookMs = Date.now() - started;
    expect(accepted.status).toBe(202);
    expect(accepted.body.total).toBe(10_000);
    const [{ n }] = await stack.db.query('SELECT COUNT(*)::int AS n FROM messages WHERE batch_id = $1', [
      accepted.body.batchId,
    ]);
    expect(n).toBe(10_000);
    const cancelled = await stack.api<BatchView>('POST', `/api/batches/${accepted.body.batchId}/cancel`, {
      token: key,
    });
    expect(cancelled.body.cancelled).toBeGreaterThan(9_900);
    process.stdout.write(`accepted 10 000 items in ${tookMs} ms\n`);
  }, 120_000);
});

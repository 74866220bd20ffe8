import type { BatchAccepted, BatchView } from '@conclave/contracts';
import { ensureEventPartitions, listEventPartitions, weekPartition } from '@conclave/persistence';
import { Queue, type Job } from 'bullmq';
import IORedis from 'ioredis';
import type { LifecycleRunSummary } from '../apps/worker/src/maintenance/data-lifecycle.job';
import type { RunningWorker } from '../apps/worker/src/worker';
import { rowsOf, TestStack } from './support/harness';
import { until } from './support/wait';

/**
 * Issue 23, retention: the fleet-wide data-lifecycle job (one BullMQ job scheduler, two workers)
 * deletes the finished data whose last activity is past RETENTION_DAYS — in chunks, batches with
 * their items — and never a running deliberation or batch, nor recent data; it drops an event
 * partition once no message of its week is left, and counts what it removed on /metrics.
 */

const DAY = 86_400_000;
const CHUNK = 5;
const COUNCIL = { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' };
const SLOW = { councilModels: ['sim/slow:delay60000', 'sim/b'], chairmanModel: 'sim/c' };

/** `metric{labels} value` lines of a Prometheus exposition, summed over the given label filter. */
function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

describe('retention: the fleet-wide data-lifecycle job', () => {
  const stack = new TestStack({
    RETENTION_DAYS: '30',
    LIFECYCLE_INTERVAL_MS: '1000',
    RETENTION_CHUNK_SIZE: String(CHUNK),
    SIM_LATENCY_MS: '5',
  });
  const workers: RunningWorker[] = [];
  let connection: IORedis;
  let queue: Queue;

  beforeAll(async () => {
    await stack.start({ worker: false });
    workers.push(await stack.startWorker(), await stack.startWorker());
    connection = new IORedis(stack.config.redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue('data-lifecycle', { connection, prefix: stack.config.queuePrefix });
  }, 60_000);
  afterAll(async () => {
    await queue?.close();
    connection?.disconnect();
    await stack.stop();
  });

  const completedRuns = async (): Promise<Job<unknown, LifecycleRunSummary>[]> =>
    (await queue.getJobs(['completed'], 0, -1)).sort((a, b) => (a.processedOn ?? 0) - (b.processedOn ?? 0));
  /** Waits for a run that started after `since` to have completed; returns every run completed by then. */
  const runAfter = (since: number) =>
    until(async () => {
      const runs = await completedRuns();
      return runs.some((r) => (r.processedOn ?? 0) > since) && runs;
    });
  const metrics = async () =>
    Promise.all(workers.map(async (w) => (await fetch(`http://127.0.0.1:${w.httpPort}/metrics`)).text()));
  const batchView = (id: string) => stack.api<BatchView>('GET', `/api/batches/${id}`);
  const submit = async (body: unknown) => {
    const answer = await stack.api<BatchAccepted>('POST', '/api/batches', { body });
    expect(answer.status).toBe(202);
    return answer.body.batchId;
  };
  const conversationsOfBatch = async (batchId: string) =>
    (
      (await stack.db.query('SELECT DISTINCT conversation_id AS id FROM messages WHERE batch_id = $1', [
        batchId,
      ])) as {
        id: string;
      }[]
    ).map((r) => r.id);

  it('registers one job scheduler however many workers start, and runs it one worker at a time', async () => {
    const schedulers = await queue.getJobSchedulers();
    expect(schedulers).toHaveLength(1);
    expect(schedulers[0]).toMatchObject({ key: 'data-lifecycle', name: 'run' });
    expect(Number(schedulers[0].every)).toBe(1000);
    expect(await queue.getGlobalConcurrency()).toBe(1);
    await until(async () => (await completedRuns()).length >= 3);
  });

  it('deletes the finished data past retention in chunks, and nothing running, recent or still in use', async () => {
    // Finished data that will be made old: two conversations, and a batch of two items.
    const old = [
      await stack.run({ question: 'Old one?', ...COUNCIL }),
      await stack.run({ question: 'Old two?', ...COUNCIL }),
    ];
    const oldBatch = await submit({
      name: 'old',
      defaults: { mode: 'council', ...COUNCIL },
      items: [{ question: 'B1?' }, { question: 'B2?' }],
    });
    await until(async () => (await batchView(oldBatch)).body.finishedAt !== null);
    // Kept: a recent conversation; a conversation whose first turn is old but whose second is recent.
    const recent = await stack.run({ question: 'Recent?', ...COUNCIL });
    const turn1 = await stack.run({ question: 'First turn?', ...COUNCIL });
    await stack.run({ question: 'Second turn?', conversationId: turn1.conversationId, ...COUNCIL });
    // Kept however old they look: a running deliberation and a running batch.
    const running = await stack.deliberate({ question: 'Still thinking?', ...SLOW });
    const runningBatch = await submit({
      name: 'running',
      defaults: { mode: 'council', ...SLOW },
      items: [{ question: 'R1?' }, { question: 'R2?' }],
      concurrency: 1,
    });
    await until(async () => (await batchView(runningBatch)).body.running === 1);

    // Old data written straight to the tables: more conversations than one chunk holds.
    const OLD = new Date(Date.now() - 40 * DAY);
    const week = weekPartition(OLD);
    await stack.db.transaction((m) => ensureEventPartitions(m, [week]));
    const [user]: { id: string }[] = await stack.db.query(
      'SELECT user_id AS id FROM conversations WHERE id = $1',
      [recent.conversationId],
    );
    const oldBatchConversations = await conversationsOfBatch(oldBatch);
    const runningBatchConversations = await conversationsOfBatch(runningBatch);
    const doomedReal = [...old.map((o) => o.conversationId), ...oldBatchConversations];
    const synthetic: string[] = [];
    await stack.db.transaction(async (m) => {
      // One transaction: a run sees the old data all at once or not at all.
      const rows: { id: string }[] = await m.query(
        `WITH c AS (
           INSERT INTO conversations (user_id, mode, created_at, updated_at)
           SELECT $1, 'council', $2::timestamptz, $2::timestamptz FROM generate_series(1, 12) RETURNING id, created_at),
         u AS (
           INSERT INTO messages (conversation_id, role, content, status, turn, mode, created_at)
           SELECT id, 'user', 'old question', 'complete', 1, 'council', created_at FROM c),
         a AS (
           INSERT INTO messages (conversation_id, role, content, status, turn, mode, created_at, last_seq, completed_at)
           SELECT id, 'assistant', 'old answer', 'complete', 1, 'council', created_at, 3, created_at FROM c
           RETURNING id, created_at),
         s AS (
           INSERT INTO deliberation_stages (message_id, stage_type, stage_order, model, content)
           SELECT id, 'stage1', 1, 'sim/a', 'old answer' FROM a),
         k AS (
           INSERT INTO model_calls (message_id, stage, call_key, model, ok, content, response_time_ms)
           SELECT id, 'stage1', 'sim/a', 'sim/a', true, 'old answer', 5 FROM a),
         e AS (
           INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
           SELECT a.id, a.created_at, g, 'k' || g, 'model_progress', '{}' FROM a, generate_series(1, 3) g)
         SELECT id FROM c`,
        [user.id, OLD],
      );
      synthetic.push(...rows.map((r) => r.id));
      // Real finished conversations and the finished batch, made 40 days old (their events move to that week).
      await m.query('UPDATE messages SET created_at = $2 WHERE conversation_id = ANY($1::uuid[])', [
        doomedReal,
        OLD,
      ]);
      await m.query('UPDATE conversations SET created_at = $2, updated_at = $2 WHERE id = ANY($1::uuid[])', [
        doomedReal,
        OLD,
      ]);
      await m.query('UPDATE batches SET created_at = $2, started_at = $2, finished_at = $2 WHERE id = $1', [
        oldBatch,
        OLD,
      ]);
      // The multi-turn conversation's first turn is as old, but it was active since.
      await m.query('UPDATE messages SET created_at = $2 WHERE conversation_id = $1 AND turn = 1', [
        turn1.conversationId,
        OLD,
      ]);
      // The running deliberation and the running batch were last active 40 days ago, by their rows.
      await m.query('UPDATE conversations SET updated_at = $2 WHERE id = ANY($1::uuid[])', [
        [running.conversationId, ...runningBatchConversations],
        OLD,
      ]);
      await m.query('UPDATE batches SET created_at = $2, started_at = $2 WHERE id = $1', [runningBatch, OLD]);
    });
    const doomed = [...doomedReal, ...synthetic];
    const doomedRows = await rowsOf(stack.db, doomed);
    expect(doomedRows.conversations).toBe(16);
    const kept = [
      recent.conversationId,
      turn1.conversationId,
      running.conversationId,
      ...runningBatchConversations,
    ];
    const keptRows = await rowsOf(stack.db, kept);
    const [{ placed }]: { placed: number }[] = await stack.db.query(
      `SELECT count(*)::int AS placed FROM deliberation_events e JOIN messages m ON m.id = e.message_id
       WHERE m.conversation_id = ANY($1::uuid[]) AND e.tableoid = $2::regclass`,
      [doomed, week.name],
    );
    expect(placed).toBe(doomedRows.deliberation_events); // the old rows are all in their week's partition

    const setUp = Date.now();
    await until(async () => (await rowsOf(stack.db, doomed)).conversations === 0 && (await runAfter(setUp)));
    expect(await rowsOf(stack.db, doomed)).toEqual({
      conversations: 0,
      messages: 0,
      deliberation_stages: 0,
      model_calls: 0,
      deliberation_events: 0,
    });
    expect((await batchView(oldBatch)).status).toBe(404);
    expect((await stack.db.query('SELECT 1 FROM batches WHERE id = $1', [oldBatch])).length).toBe(0);

    // What is running, recent or active since stays whole.
    const keptNow = await rowsOf(stack.db, kept);
    expect(keptNow).toMatchObject({
      conversations: keptRows.conversations,
      messages: keptRows.messages,
      deliberation_stages: keptRows.deliberation_stages,
    });
    expect(keptNow.deliberation_events).toBeGreaterThanOrEqual(keptRows.deliberation_events);
    expect(
      (await stack.api<{ status: string }>('GET', `/api/deliberations/${running.messageId}`)).body.status,
    ).toBe('running');
    expect((await batchView(runningBatch)).body).toMatchObject({ status: 'running', total: 2 });
    const history = await stack.follow(turn1.messageId);
    expect(history.at(-1)?.type).toBe('complete'); // the old turn's events are still replayed

    // Every run together removed exactly the old data, batch items with their batch, in chunks.
    const runs = (await completedRuns()).map((r) => r.returnvalue);
    const total = (kind: keyof LifecycleRunSummary['removed']) =>
      runs.reduce((n, r) => n + r.removed[kind], 0);
    expect(total('conversations')).toBe(16);
    expect(total('batches')).toBe(1);
    expect(total('messages')).toBe(doomedRows.messages);
    expect(total('stage_rows')).toBe(doomedRows.deliberation_stages);
    expect(total('model_calls')).toBe(doomedRows.model_calls);
    expect(total('events')).toBe(doomedRows.deliberation_events);
    const working = runs.filter((r) => r.removed.conversations > 0);
    // 14 plain conversations need three chunks of five; the batch's two items go in one more.
    expect(working.reduce((n, r) => n + r.chunks, 0)).toBeGreaterThanOrEqual(4);
    for (const run of runs) expect(run.cutoff).not.toBeNull();

    // The runs never overlapped, though two workers consume the queue.
    const jobs = await completedRuns();
    for (let i = 1; i < jobs.length; i++)
      expect(jobs[i].processedOn).toBeGreaterThanOrEqual(jobs[i - 1].finishedOn ?? 0);
    expect(new Set(runs.map((r) => r.worker)).size).toBeGreaterThanOrEqual(1);

    // Both workers' /metrics, added up, count the same.
    const exposed = await metrics();
    const counted = (kind: string) =>
      exposed.reduce((n, text) => n + metricValue(text, 'conclave_retention_deleted_total', { kind }), 0);
    expect(counted('conversations')).toBe(16);
    expect(counted('events')).toBe(doomedRows.deliberation_events);
    expect(counted('batches')).toBe(1);
    const okRuns = exposed.reduce(
      (n, text) => n + metricValue(text, 'conclave_lifecycle_runs_total', { outcome: 'ok' }),
      0,
    );
    expect(okRuns).toBeGreaterThanOrEqual(working.length);
    for (const text of exposed)
      expect(text).toContain('conclave_retention_deleted_total{kind="stage_rows",process="worker"}');

    // The old week's partition stays while the multi-turn conversation needs it; deleting that
    // conversation lets the next run drop the whole partition.
    expect((await listEventPartitions(stack.db)).map((p) => p.name)).toContain(week.name);
    expect((await stack.api('DELETE', `/api/conversations/${turn1.conversationId}`)).status).toBe(204);
    const deletedAt = Date.now();
    await until(async () => !(await listEventPartitions(stack.db)).some((p) => p.name === week.name));
    const later = await runAfter(deletedAt);
    expect(later.some((r) => r.returnvalue.partitionsDropped.includes(week.name))).toBe(true);
    const after = await metrics();
    expect(
      after.reduce(
        (n, text) => n + metricValue(text, 'conclave_retention_deleted_total', { kind: 'event_partitions' }),
        0,
      ),
    ).toBe(1);
    // This week's partition and the ones ahead are never dropped.
    expect((await listEventPartitions(stack.db)).map((p) => p.name)).toContain(
      weekPartition(new Date()).name,
    );

    await stack.api('POST', `/api/deliberations/${running.messageId}/cancel`);
    await stack.api('POST', `/api/batches/${runningBatch}/cancel`);
  });
});

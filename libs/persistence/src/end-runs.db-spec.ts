import { randomUUID } from 'node:crypto';
import type { DeliveredEvent } from '@conclave/contracts';
import { endingWrite, endRun, type DeliberationEnd } from '@conclave/deliberation';
import type { DataSource, EntityManager } from 'typeorm';
import { scratchDatabase, type ScratchDatabase } from '../../../test/support/database';
import { sleep, until } from '../../../test/support/wait';
import { TypeOrmDeliberationStore } from './deliberation.store';
import { endRuns } from './end-runs';
import { ApiKeysRepository } from './repositories/api-keys.repository';
import { BatchesRepository, budgetCancelReason, type NewBatchItem } from './repositories/batches.repository';
import { OpenWorkRepository } from './repositories/open-work.repository';
import { StopListener } from './stop-listener';
import { WorkStops } from './work-stops';

/**
 * Every way a deliberation is ended from outside its stages goes through one ending write
 * (endingWrite) and one writer (conclave_stage_write): endRun for one (the worker's cap and final
 * failure, a stop), endRuns for a batch's queued items (its cancel, its budget). These check that
 * each path stores exactly the rows it stored before that (issue 35): the batch paths against the
 * hand-written statement they ran until then, kept here verbatim as the reference.
 */

/** What BatchesRepository's endQueued ran before issue 35: $1 the batch, $2 the reason. */
const legacyEndQueued = (selected: string) => `WITH ended AS (
         UPDATE messages SET status = 'cancelled', error = $2, stage = NULL, completed_at = now(),
           updated_at = now(), last_seq = last_seq + 1
         WHERE id IN (${selected}) AND status = 'queued'
         RETURNING id, conversation_id, created_at, last_seq),
       touched AS (
         UPDATE conversations SET updated_at = now() WHERE id IN (SELECT conversation_id FROM ended)),
       appended AS (
         INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload, created_at)
         SELECT id, created_at, last_seq, 'cancelled', 'cancelled', jsonb_build_object('reason', $2::text),
           clock_timestamp()
         FROM ended
         RETURNING message_id, seq, type, payload, created_at)
       SELECT message_id, seq, type, payload, created_at FROM appended`;
/** The batch cancel's selection of its queued items. */
const LEGACY_CANCEL_SELECTION = `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'
       FOR UPDATE SKIP LOCKED`;
/** The budget stop's selection of the items not yet dispatched. */
const LEGACY_BUDGET_SELECTION = `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'
           AND dispatched_at IS NULL`;

let scratch: ScratchDatabase;
let db: DataSource;
let batches: BatchesRepository;
let store: TypeOrmDeliberationStore;
let stops: WorkStops;
let listener: StopListener;
const heard: string[] = [];

beforeAll(async () => {
  scratch = await scratchDatabase({ prefix: 'conclave_er', poolSize: 4 });
  db = scratch.db;
  batches = new BatchesRepository(db);
  store = new TypeOrmDeliberationStore(db, { groupedWrites: false });
  stops = new WorkStops({
    store,
    batches,
    openWork: new OpenWorkRepository(db),
    redis: null,
    warn: (message) => {
      throw new Error(message);
    },
  });
  listener = new StopListener(scratch.url, {
    stop: (id) => heard.push(id),
    up: () => undefined,
    down: () => undefined,
  });
  await listener.start();
});

afterAll(async () => {
  await listener?.close();
  await scratch?.drop();
});

const item = (question: string): NewBatchItem => ({
  mode: 'council',
  userContent: question,
  config: { q: question },
  firstStage: 'stage1',
});

/** Two batches alike (one to end as before, one as now), each with its first item picked and running. */
async function twinBatches(maxCostUsd: number | null): Promise<{ batchId: string; running: string }[]> {
  const { userId } = await new ApiKeysRepository(db).createUserWithKey(`u-${randomUUID()}`, 'user');
  const twins: { batchId: string; running: string }[] = [];
  for (let i = 0; i < 2; i += 1) {
    const batchId = await batches.create(
      {
        userId,
        name: 'twins',
        concurrency: 1,
        generateTitles: false,
        defaults: { mode: 'council' },
        items: [item('1'), item('2'), item('3'), item('4')],
        maxCostUsd,
      },
      null,
    );
    const [picked] = (await batches.pickItems(batchId))!.items;
    const started = await store.writeStage(picked.messageId, {
      stage: 'stage1',
      markRunning: true,
      events: [{ key: 'stage1_start', type: 'stage1_start', payload: {} }],
    });
    expect(started.kind).toBe('written');
    twins.push({ batchId, running: picked.messageId });
  }
  return twins;
}

/** What a batch stored for its items, without ids and times (times only as how they relate). */
async function storedRows(batchId: string): Promise<unknown> {
  const [batch]: unknown[] = await db.query(
    `SELECT status, finished_at IS NOT NULL AS finished, cancelled_at IS NOT NULL AS cancelled FROM batches WHERE id = $1`,
    [batchId],
  );
  const items: unknown[] = await db.query(
    `SELECT m.batch_index, m.status, m.error, m.stage, m.content, m.last_seq,
       m.dispatched_at IS NOT NULL AS dispatched, m.completed_at IS NOT NULL AS completed,
       m.completed_at = m.updated_at AS completed_when_updated,
       c.updated_at = m.updated_at AS conversation_updated,
       (SELECT jsonb_agg(jsonb_build_object('seq', e.seq, 'key', e.event_key, 'type', e.type,
            'payload', e.payload, 'partition', e.message_created_at = m.created_at,
            'after_end', e.created_at >= m.completed_at) ORDER BY e.seq)
        FROM deliberation_events e WHERE e.message_id = m.id) AS events
     FROM messages m JOIN conversations c ON c.id = m.conversation_id
     WHERE m.batch_id = $1 AND m.role = 'assistant' ORDER BY m.batch_index`,
    [batchId],
  );
  return { batch, items };
}

/** Published events as subscribers see them, without the message ids and times. */
const published = (events: DeliveredEvent[]) =>
  events.map((event) => {
    const { messageId, at, ...rest } = event;
    expect([typeof messageId, new Date(at).toISOString()]).toEqual(['string', at]);
    return { ...rest, at: expect.any(String) as string };
  });

const legacyRows = (rows: { message_id: string; seq: number; type: string; payload: object }[]) =>
  rows.map((r) => ({ ...r.payload, type: r.type, seq: r.seq, at: expect.any(String) as string }));

describe('one way to end a run (issue 35): each path stores what it stored before', () => {
  it("a batch's cancel: its queued items as the hand-written statement ended them, its running one as a stop", async () => {
    const [before, now] = await twinBatches(null);
    const reason = 'The batch was cancelled.';

    // Before: the batch marked, its queued items by the statement, its running item by a stop.
    await batches.markCancelled(before.batchId);
    const legacy: { message_id: string; seq: number; type: string; payload: object }[] = await db.query(
      legacyEndQueued(LEGACY_CANCEL_SELECTION),
      [before.batchId, reason],
    );
    const stopped = await store.writeStage(
      before.running,
      endingWrite('stage1', { kind: 'cancelled', reason }),
    );
    await batches.closeIfDone(before.batchId);

    // Now: WorkStops.cancelBatch (without Redis), its queued items through endRuns.
    expect(await stops.cancelBatch(now.batchId, reason)).toEqual({ going: true, items: 4 });

    const rows = await storedRows(now.batchId);
    expect(rows).toEqual(await storedRows(before.batchId));
    expect(rows).toMatchObject({
      batch: { status: 'cancelled', finished: true, cancelled: true },
      items: [
        {
          batch_index: 0,
          status: 'cancelled',
          error: reason,
          stage: null,
          last_seq: 2,
          completed: true,
          completed_when_updated: true,
          conversation_updated: true,
          events: [
            { seq: 1, key: 'stage1_start', type: 'stage1_start', payload: {} },
            { seq: 2, key: 'cancelled', type: 'cancelled', payload: { reason }, after_end: true },
          ],
        },
        ...[1, 2, 3].map((index) => ({
          batch_index: index,
          status: 'cancelled',
          error: reason,
          stage: null,
          last_seq: 1,
          dispatched: false,
          completed: true,
          completed_when_updated: true,
          conversation_updated: true,
          events: [{ seq: 1, key: 'cancelled', type: 'cancelled', payload: { reason }, partition: true }],
        })),
      ],
    });
    expect(stopped.kind).toBe('written');
    expect(legacyRows(legacy)).toEqual(
      Array.from({ length: 3 }, () => ({ type: 'cancelled', seq: 1, reason, at: expect.any(String) })),
    );
    // Every item's stop is announced by the stop trigger (NOTIFY conclave_stops), once, as before.
    const ids = (
      await db.query(`SELECT id FROM messages WHERE batch_id = ANY($1) AND role = 'assistant'`, [
        [before.batchId, now.batchId],
      ])
    ).map((r: { id: string }) => r.id) as string[];
    await until(() => ids.every((id) => heard.includes(id)), 'the stop notices', 10_000);
    await sleep(200);
    expect(heard.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
  });

  it("a batch's spent budget: the items it had not started, as the hand-written statement ended them", async () => {
    const [before, now] = await twinBatches(0.01);
    for (const { running } of [before, now]) {
      await db.query(
        `INSERT INTO model_calls (message_id, stage, call_key, model, ok, content, response_time_ms, prompt_tokens,
           completion_tokens, cost_usd) VALUES ($1, 'stage1', 'a', 'sim/a', true, 'x', 10, 10, 20, 0.02)`,
        [running],
      );
    }
    const reason = budgetCancelReason(0.01, 0.02);

    // Before: pickItemsIn's budget branch, under the batch's lock.
    const legacy = await db.transaction(async (manager: EntityManager) => {
      await manager.query('SELECT status FROM batches WHERE id = $1 FOR NO KEY UPDATE', [before.batchId]);
      const ended: { message_id: string; seq: number; type: string; payload: object }[] = await manager.query(
        legacyEndQueued(LEGACY_BUDGET_SELECTION),
        [before.batchId, reason],
      );
      await manager.query(`UPDATE batches SET status = 'budget_exhausted' WHERE id = $1`, [before.batchId]);
      return ended;
    });

    const picked = await batches.pickItems(now.batchId);
    expect(picked?.items).toEqual([]);
    expect(published(picked?.cancelled ?? [])).toEqual(legacyRows(legacy));
    expect(published(picked?.cancelled ?? [])).toEqual(
      Array.from({ length: 3 }, () => ({ type: 'cancelled', seq: 1, reason, at: expect.any(String) })),
    );

    const rows = await storedRows(now.batchId);
    expect(rows).toEqual(await storedRows(before.batchId));
    expect(rows).toMatchObject({
      batch: { status: 'budget_exhausted', finished: false },
      items: [
        { status: 'running', stage: 'stage1', last_seq: 1, completed: false },
        ...[1, 2, 3].map(() => ({
          status: 'cancelled',
          error: reason,
          stage: null,
          last_seq: 1,
          completed_when_updated: true,
          conversation_updated: true,
          events: [{ seq: 1, key: 'cancelled', type: 'cancelled', payload: { reason } }],
        })),
      ],
    });
    // The items already dispatched finish: nothing more is ended when the next pick comes.
    expect(await batches.pickItems(now.batchId)).toBeNull();
  });

  it("the worker's endings (the time cap, a job failed for good) and a stop: endRun, the write they made before", async () => {
    const [{ batchId, running }] = await twinBatches(null);
    const [, twin] = (await batches.itemsPage(batchId, -1, 10)).map((i) => i.messageId);
    // The twin as the running item: started, one event stored.
    await store.writeStage(twin, {
      stage: 'stage1',
      markRunning: true,
      events: [{ key: 'stage1_start', type: 'stage1_start', payload: {} }],
    });
    const end: DeliberationEnd = {
      kind: 'failed',
      message: 'The deliberation ran past its 600 s limit and was stopped.',
    };
    const before = await store.writeStage(twin, endingWrite('stage1', end));
    const now = await endRun(store, running, 'stage1', end);
    expect(now.kind).toBe('written');
    expect(before.kind).toBe('written');
    if (now.kind !== 'written' || before.kind !== 'written') return;
    expect(published(now.events)).toEqual(published(before.events));
    expect(published(now.events)).toEqual([
      { type: 'error', seq: 2, message: end.message, at: expect.any(String) },
    ]);
    const { items } = (await storedRows(batchId)) as { items: unknown[] };
    expect(items[0]).toEqual({ ...(items[1] as object), batch_index: 0, dispatched: true });
    expect(items[0]).toMatchObject({
      status: 'failed',
      error: end.message,
      stage: null,
      last_seq: 2,
      completed_when_updated: true,
      conversation_updated: true,
      events: [
        { seq: 1, key: 'stage1_start' },
        { seq: 2, key: 'error', type: 'error', payload: { message: end.message } },
      ],
    });

    // Ended already: the write is skipped (a stop answers 409 naming the status), nothing changes.
    expect(await endRun(store, running, null, { kind: 'cancelled', reason: 'late' })).toEqual({
      kind: 'skipped',
    });
    expect(await endRuns(db, { sql: 'SELECT $1::uuid AS id', params: [running] }, end)).toEqual([]);
    expect(((await storedRows(batchId)) as { items: unknown[] }).items[0]).toEqual(items[0]);
    expect(await endRun(store, randomUUID(), 'stage1', end)).toEqual({ kind: 'missing' });
  });
});

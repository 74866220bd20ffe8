import { randomBytes, randomUUID } from 'node:crypto';
import type { BatchAccepted, BatchView } from '@conclave/contracts';
import {
  BudgetsRepository,
  CONVERSATION_TABLES,
  LifecycleRepository,
  MIGRATIONS,
  TypeOrmDeliberationStore,
  dataSourceOptions,
  ensureDatabase,
  ensureEventPartitions,
  listEventPartitions,
  migrate,
  partitionsAhead,
  weekPartition,
} from '@conclave/persistence';
import { DataSource } from 'typeorm';
import { rowsOf, TestStack } from './support/harness';
import { dropDatabases } from './support/database';
import { until } from './support/wait';

/**
 * Issue 23, data lifecycle (API and storage): DELETE /api/batches/:id, the weekly partitions of
 * deliberation_events (made ahead, rows in the right one, the default one when none fits), a
 * retention chunk against the real database, and the migration that partitions a table with rows.
 * The fleet-wide retention job is in retention.e2e-spec.ts.
 */

const COUNCIL = { mode: 'council', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' };
/** Events of messages that no longer exist (there must never be any: the foreign key cascades). */
async function orphanEvents(db: DataSource): Promise<number> {
  const [{ n }]: { n: number }[] = await db.query(
    `SELECT count(*)::int AS n FROM deliberation_events e
     WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id)`,
  );
  return n;
}

describe('data lifecycle: DELETE /api/batches/:id, event partitions, migration', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey', SIM_LATENCY_MS: '5' });
  let alice = '';
  let bob = '';

  beforeAll(async () => {
    await stack.start();
    alice = await stack.createUser('alice');
    bob = await stack.createUser('bob');
  }, 60_000);
  afterAll(() => stack.stop());

  const submit = async (token: string, body: unknown) => {
    const answer = await stack.api<BatchAccepted & { message?: string }>('POST', '/api/batches', {
      token,
      body,
    });
    expect(answer.status).toBe(202);
    return answer.body.batchId;
  };
  const view = (token: string, batchId: string) =>
    stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token });
  const finished = (token: string, batchId: string) =>
    until(async () => {
      const answer = await view(token, batchId);
      return answer.status === 200 && answer.body.finishedAt !== null && answer.body;
    });
  const conversationsOf = async (batchId: string): Promise<string[]> =>
    (
      (await stack.db.query(
        'SELECT DISTINCT conversation_id AS id FROM messages WHERE batch_id = $1 ORDER BY 1',
        [batchId],
      )) as { id: string }[]
    ).map((r) => r.id);
  const questions = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => ({ question: `${tag} ${i}?` }));

  describe('DELETE /api/batches/:id', () => {
    it("deletes a finished batch with every item's data, and nothing else", async () => {
      const doomed = await submit(alice, {
        name: 'doomed',
        defaults: COUNCIL,
        items: questions(3, 'doomed'),
      });
      const kept = await submit(alice, { name: 'kept', defaults: COUNCIL, items: questions(2, 'kept') });
      const bobs = await submit(bob, { name: 'bobs', defaults: COUNCIL, items: questions(2, 'bob') });
      const standalone = await stack.deliberate(
        { question: 'Alone?', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
        alice,
      );
      await stack.follow(standalone.messageId, { socket: await stack.connect(alice) });
      for (const [token, id] of [
        [alice, doomed],
        [alice, kept],
        [bob, bobs],
      ]) {
        expect(await finished(token, id)).toMatchObject({ status: 'complete', failed: 0 });
      }

      const doomedConversations = await conversationsOf(doomed);
      expect(doomedConversations).toHaveLength(3);
      const before = await rowsOf(stack.db, doomedConversations);
      // Every kind of row is there to delete: stage rows, model calls and events of each item.
      for (const table of CONVERSATION_TABLES) expect(before[table]).toBeGreaterThan(0);
      const [itemMessage]: { id: string }[] = await stack.db.query(
        `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' LIMIT 1`,
        [doomed],
      );
      const others = [
        ...(await conversationsOf(kept)),
        ...(await conversationsOf(bobs)),
        standalone.conversationId,
      ];
      const othersBefore = await rowsOf(stack.db, others);
      const keptResults = await (
        await fetch(`${stack.baseUrl}/api/batches/${kept}/results`, {
          headers: { authorization: `Bearer ${alice}` },
        })
      ).text();

      // Another user's DELETE finds no such batch, and changes nothing.
      const foreign = await stack.api<{ message: string }>('DELETE', `/api/batches/${doomed}`, {
        token: bob,
      });
      expect(foreign.status).toBe(404);
      expect(await rowsOf(stack.db, doomedConversations)).toEqual(before);

      const [{ id: aliceId }]: { id: string }[] = await stack.db.query(
        `SELECT id FROM users WHERE name = 'alice'`,
      );
      // Simulated models cost nothing: give the doomed items' calls a price, as a provider would.
      await stack.db.query(
        `UPDATE model_calls SET cost_usd = 0.01 WHERE message_id IN (SELECT id FROM messages WHERE batch_id = $1)`,
        [doomed],
      );
      const budgets = new BudgetsRepository(stack.db);
      const spent = await budgets.spentThisMonth(aliceId);
      expect(spent).toBeCloseTo(0.01 * before.model_calls, 10);

      const deleted = await stack.api('DELETE', `/api/batches/${doomed}`, { token: alice });
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBeNull();

      expect(await rowsOf(stack.db, doomedConversations)).toEqual({
        conversations: 0,
        messages: 0,
        deliberation_stages: 0,
        model_calls: 0,
        deliberation_events: 0,
      });
      expect((await stack.db.query('SELECT 1 FROM batches WHERE id = $1', [doomed])).length).toBe(0);
      expect((await view(alice, doomed)).status).toBe(404);
      expect((await stack.api('GET', `/api/deliberations/${itemMessage.id}`, { token: alice })).status).toBe(
        404,
      );
      expect(
        (await stack.api('GET', `/api/conversations/${doomedConversations[0]}`, { token: alice })).status,
      ).toBe(404);
      expect(await orphanEvents(stack.db)).toBe(0);
      // What its calls cost stays in the month's spend: deleting does not refund a budget.
      expect(await budgets.spentThisMonth(aliceId)).toBeCloseTo(spent, 10);

      // The other batches (also another user's) and the standalone conversation are untouched.
      expect(await rowsOf(stack.db, others)).toEqual(othersBefore);
      expect((await view(alice, kept)).body).toMatchObject({ status: 'complete', complete: 2 });
      expect((await view(bob, bobs)).body).toMatchObject({ status: 'complete', complete: 2 });
      const keptAfter = await (
        await fetch(`${stack.baseUrl}/api/batches/${kept}/results`, {
          headers: { authorization: `Bearer ${alice}` },
        })
      ).text();
      expect(keptAfter).toBe(keptResults);
      const replay = await stack.follow(standalone.messageId, { socket: await stack.connect(alice) });
      expect(replay.at(-1)?.type).toBe('complete');

      // A second DELETE finds nothing: 404, as for a batch that never was.
      const again = await stack.api<{ message: string }>('DELETE', `/api/batches/${doomed}`, {
        token: alice,
      });
      expect(again.status).toBe(404);
      expect(again.body.message).toMatch(/batch/);
      expect((await stack.api('DELETE', `/api/batches/${randomUUID()}`, { token: alice })).status).toBe(404);
      expect((await stack.api('DELETE', '/api/batches/not-a-uuid', { token: alice })).status).toBe(404);
    });

    it('refuses (409) a running batch, saying how to stop it; once cancelled and finished it goes', async () => {
      const slow = await submit(alice, {
        name: 'slow',
        defaults: { ...COUNCIL, councilModels: ['sim/slow:delay60000', 'sim/b'] },
        items: questions(3, 'slow'),
        concurrency: 1,
      });
      await until(async () => (await view(alice, slow)).body.running === 1);
      const refused = await stack.api<{ message: string }>('DELETE', `/api/batches/${slow}`, {
        token: alice,
      });
      expect(refused.status).toBe(409);
      expect(refused.body.message).toBe(
        `batch ${slow} is running: cancel it first (POST /api/batches/${slow}/cancel), then delete it once it has finished`,
      );
      // Nothing was deleted.
      const conversations = await conversationsOf(slow);
      expect((await rowsOf(stack.db, conversations)).conversations).toBe(3);
      // Another user still gets 404, not the batch's state.
      expect((await stack.api('DELETE', `/api/batches/${slow}`, { token: bob })).status).toBe(404);

      expect((await stack.api('POST', `/api/batches/${slow}/cancel`, { token: alice })).status).toBe(200);
      expect(await finished(alice, slow)).toMatchObject({ status: 'cancelled' });
      expect((await stack.api('DELETE', `/api/batches/${slow}`, { token: alice })).status).toBe(204);
      expect(await rowsOf(stack.db, conversations)).toMatchObject({ conversations: 0, messages: 0 });
    });

    it('refuses (409) while a follow-up turn in one of its conversations runs', async () => {
      const batch = await submit(alice, {
        name: 'followed',
        defaults: COUNCIL,
        items: questions(2, 'followed'),
      });
      await finished(alice, batch);
      const [conversationId] = await conversationsOf(batch);
      const followUp = await stack.deliberate(
        {
          question: 'And then?',
          conversationId,
          councilModels: ['sim/slow:delay60000', 'sim/b'],
          chairmanModel: 'sim/c',
        },
        alice,
      );
      const refused = await stack.api<{ message: string }>('DELETE', `/api/batches/${batch}`, {
        token: alice,
      });
      expect(refused.status).toBe(409);
      expect(refused.body.message).toMatch(/follow-up deliberation .* still running/);
      expect(
        (await stack.api('POST', `/api/deliberations/${followUp.messageId}/cancel`, { token: alice })).status,
      ).toBe(200);
      await until(
        async () => (await stack.api('DELETE', `/api/batches/${batch}`, { token: alice })).status === 204,
      );
      expect((await rowsOf(stack.db, [conversationId])).messages).toBe(0);
    });
  });

  describe('weekly partitions of deliberation_events', () => {
    it('has this week and the next four made ahead at migrate time, and a default partition', async () => {
      const names = (await listEventPartitions(stack.db)).map((p) => p.name);
      for (const week of partitionsAhead(new Date())) expect(names).toContain(week.name);
      expect(names).toContain('deliberation_events_default');
    });

    it("stores a deliberation's events in the partition of its message's week", async () => {
      const { messageId } = await stack.deliberate(
        { question: 'Where do my events go?', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
        alice,
      );
      const events = await stack.follow(messageId, { socket: await stack.connect(alice) });
      const [message]: { created_at: Date }[] = await stack.db.query(
        'SELECT created_at FROM messages WHERE id = $1',
        [messageId],
      );
      const stored: { partition: string; n: number }[] = await stack.db.query(
        `SELECT tableoid::regclass::text AS partition, count(*)::int AS n FROM deliberation_events
         WHERE message_id = $1 GROUP BY 1`,
        [messageId],
      );
      expect(stored).toEqual([{ partition: weekPartition(message.created_at).name, n: events.length }]);
      // Replay from the store (what every subscription reads) gives them all, in order.
      const replayed = await new TypeOrmDeliberationStore(stack.db).eventsAfter(messageId, 0);
      expect(replayed.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    });

    it('takes an event no weekly partition fits into the default one, and moves it when its week is made', async () => {
      const [user]: { id: string }[] = await stack.db.query(`SELECT id FROM users WHERE name = 'alice'`);
      const far = new Date(Date.now() + 3 * 365 * 86_400_000);
      const [{ id: conversationId }]: { id: string }[] = await stack.db.query(
        `INSERT INTO conversations (user_id, mode) VALUES ($1, 'council') RETURNING id`,
        [user.id],
      );
      const [{ id: messageId }]: { id: string }[] = await stack.db.query(
        `INSERT INTO messages (conversation_id, role, content, status, turn, mode, created_at)
         VALUES ($1, 'assistant', '', 'complete', 1, 'council', $2) RETURNING id`,
        [conversationId, far],
      );
      const where = () =>
        stack.db.query(
          'SELECT tableoid::regclass::text AS partition, seq FROM deliberation_events WHERE message_id = $1 ORDER BY seq',
          [messageId],
        );
      await stack.db.query(
        `INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
         SELECT $1, $2, g, 'k' || g, 'model_progress', '{}' FROM generate_series(1, 3) g`,
        [messageId, far],
      );
      expect(await where()).toEqual(
        [1, 2, 3].map((seq) => ({ partition: 'deliberation_events_default', seq })),
      );

      const week = weekPartition(far);
      await stack.db.transaction((m) => ensureEventPartitions(m, [week]));
      expect(await where()).toEqual([1, 2, 3].map((seq) => ({ partition: week.name, seq })));
      const [{ left }]: { left: number }[] = await stack.db.query(
        'SELECT count(*)::int AS left FROM deliberation_events_default',
      );
      expect(left).toBe(0);
      // The moved partition is a full one: its keys hold.
      await expect(
        stack.db.query(
          `INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
           VALUES ($1, $2, 1, 'other', 'model_progress', '{}')`,
          [messageId, far],
        ),
      ).rejects.toMatchObject({ code: '23505' });
      await stack.db.query('DELETE FROM conversations WHERE id = $1', [conversationId]);
      expect(await where()).toEqual([]);
      await stack.db.query(`DROP TABLE ${week.name}`);
    });
  });

  describe('a retention chunk (LifecycleRepository against PostgreSQL)', () => {
    it('deletes at most the chunk size of conversations past the cutoff, skipping one another transaction holds', async () => {
      const [user]: { id: string }[] = await stack.db.query(`SELECT id FROM users WHERE name = 'bob'`);
      const old = new Date(Date.now() - 400 * 86_400_000);
      const rows: { id: string }[] = await stack.db.query(
        `WITH c AS (
           INSERT INTO conversations (user_id, mode, created_at, updated_at)
           SELECT $1, 'council', $2::timestamptz, $2::timestamptz + g * interval '1 second'
           FROM generate_series(1, 8) g RETURNING id, created_at),
         a AS (
           INSERT INTO messages (conversation_id, role, content, status, turn, mode, created_at, last_seq)
           SELECT id, 'assistant', 'old', 'complete', 1, 'council', created_at, 2 FROM c RETURNING id, created_at),
         e AS (
           INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
           SELECT a.id, a.created_at, g, 'k' || g, 'model_progress', '{}' FROM a, generate_series(1, 2) g)
         SELECT id FROM c ORDER BY id`,
        [user.id, old],
      );
      const ids = rows.map((r) => r.id);
      const repository = new LifecycleRepository(stack.db);
      const cutoff = new Date(Date.now() - 300 * 86_400_000);

      // One old conversation is held (FOR UPDATE) by another transaction the whole time.
      const holder = stack.db.createQueryRunner();
      await holder.connect();
      await holder.startTransaction();
      try {
        const [oldest]: { id: string }[] = await holder.query(
          'SELECT id FROM conversations WHERE id = ANY($1::uuid[]) ORDER BY updated_at LIMIT 1 FOR UPDATE',
          [ids],
        );
        const first = await repository.conversationsChunk(cutoff, 3);
        expect(first).toMatchObject({ conversations: 3, messages: 3, events: 6 });
        expect((await rowsOf(stack.db, ids)).conversations).toBe(5);
        const second = await repository.conversationsChunk(cutoff, 3);
        expect(second.conversations).toBe(3);
        const third = await repository.conversationsChunk(cutoff, 3);
        expect(third.conversations).toBe(1); // the held one was skipped, not waited for
        expect(await rowsOf(stack.db, ids)).toMatchObject({ conversations: 1, deliberation_events: 2 });
        const [left]: { id: string }[] = await stack.db.query(
          'SELECT id FROM conversations WHERE id = ANY($1::uuid[])',
          [ids],
        );
        expect(left.id).toBe(oldest.id);
      } finally {
        await holder.rollbackTransaction();
        await holder.release();
      }
      expect((await repository.conversationsChunk(cutoff, 3)).conversations).toBe(1);
      expect((await rowsOf(stack.db, ids)).conversations).toBe(0);
      // Nothing of the recent data (batches and conversations of the tests above) was past the cutoff.
      expect((await repository.conversationsChunk(cutoff, 3)).conversations).toBe(0);
      expect(await orphanEvents(stack.db)).toBe(0);
    });
  });

  describe('the migration that partitions deliberation_events', () => {
    const databaseUrl = stack.config.databaseUrl.replace(
      /conclave_t_\w+$/,
      `conclave_t_mig_${randomBytes(4).toString('hex')}`,
    );
    let db: DataSource | null = null;
    afterAll(async () => {
      await db?.destroy().catch(() => undefined);
      await dropDatabases(databaseUrl);
    });

    it('moves every existing row into weekly partitions, keeps the keys, and can go back', async () => {
      await ensureDatabase(databaseUrl);
      const before = MIGRATIONS.filter((m) => m.name !== 'EventPartitions1764100000000');
      expect(before).toHaveLength(MIGRATIONS.length - 1);
      const old = new DataSource({ ...dataSourceOptions(databaseUrl, 2), migrations: before });
      await old.initialize();
      await old.runMigrations({ transaction: 'each' });
      // Messages of three weeks (one of them long ago), each with events, written as the old schema had them.
      const weeks = [200, 9, 0].map((days) => new Date(Date.now() - days * 86_400_000));
      const [{ id: userId }]: { id: string }[] = await old.query(
        `INSERT INTO users (name) VALUES ('m') RETURNING id`,
      );
      const messageIds: string[] = [];
      for (const [i, at] of weeks.entries()) {
        const [{ id: conversationId }]: { id: string }[] = await old.query(
          `INSERT INTO conversations (user_id, mode, created_at) VALUES ($1, 'council', $2) RETURNING id`,
          [userId, at],
        );
        const [{ id }]: { id: string }[] = await old.query(
          `INSERT INTO messages (conversation_id, role, content, status, turn, mode, created_at, last_seq)
           VALUES ($1, 'assistant', '', 'complete', 1, 'council', $2, $3) RETURNING id`,
          [conversationId, at, 5 + i],
        );
        await old.query(
          `INSERT INTO deliberation_events (message_id, seq, event_key, type, payload, created_at)
           SELECT $1, g, 'key-' || g, 'model_progress', jsonb_build_object('n', g), $2::timestamptz + g * interval '1 ms'
           FROM generate_series(1, $3::int) g`,
          [id, at, 5 + i],
        );
        messageIds.push(id);
      }
      const snapshot = (q: DataSource) =>
        q.query(
          `SELECT message_id, seq, event_key, type, payload, created_at FROM deliberation_events
           ORDER BY message_id, seq`,
        ) as Promise<unknown[]>;
      const rowsBefore = await snapshot(old);
      expect(rowsBefore).toHaveLength(5 + 6 + 7);
      await old.destroy();

      expect(await migrate(databaseUrl)).toEqual(['EventPartitions1764100000000']);
      // Quiet: the refused inserts below are expected.
      db = new DataSource({ ...dataSourceOptions(databaseUrl, 2), logging: false });
      await db.initialize();
      expect(await snapshot(db)).toEqual(rowsBefore);
      const placed: { partition: string; message_id: string; n: number }[] = await db.query(
        `SELECT tableoid::regclass::text AS partition, message_id, count(*)::int AS n
         FROM deliberation_events GROUP BY 1, 2`,
      );
      expect(
        placed.sort((a, b) => messageIds.indexOf(a.message_id) - messageIds.indexOf(b.message_id)),
      ).toEqual(
        weeks.map((at, i) => ({ partition: weekPartition(at).name, message_id: messageIds[i], n: 5 + i })),
      );
      const partitions = (await listEventPartitions(db)).map((p) => p.name);
      for (const week of partitionsAhead(new Date())) expect(partitions).toContain(week.name);

      // One row per (message, seq) and per (message, event key) still; the partition key follows the message.
      const insert = (seq: number, key: string, at: string) =>
        db!.query(
          `INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
           VALUES ($1, ${at}, $2, $3, 'model_progress', '{}')`,
          [messageIds[0], seq, key],
        );
      const own = '(SELECT created_at FROM messages WHERE id = $1)';
      await expect(insert(1, 'fresh', own)).rejects.toMatchObject({ code: '23505' });
      await expect(insert(99, 'key-1', own)).rejects.toMatchObject({ code: '23505' });
      await expect(insert(99, 'fresh', 'now()')).rejects.toMatchObject({ code: '23503' });

      // The stage write appends after the stored events, in the message's partition; replay reads them in order.
      const store = new TypeOrmDeliberationStore(db);
      const [{ result }]: { result: { result: string } }[] = await db.query(
        'SELECT conclave_stage_write($1, $2) AS result',
        [
          messageIds[0],
          JSON.stringify({
            stage: 'stage1',
            events: [{ key: 'late', type: 'model_progress', payload: { late: true } }],
          }),
        ],
      );
      expect(result.result).toBe('skipped'); // the message had ended: nothing written
      await db.query(`UPDATE messages SET status = 'running', stage = 'stage1' WHERE id = $1`, [
        messageIds[0],
      ]);
      await db.query('SELECT conclave_stage_write($1, $2)', [
        messageIds[0],
        JSON.stringify({
          stage: 'stage1',
          events: [{ key: 'late', type: 'model_progress', payload: { late: true } }],
        }),
      ]);
      const replayed = await store.eventsAfter(messageIds[0], 3);
      expect(replayed.map((e) => e.seq)).toEqual([4, 5, 6]);
      const [late]: { partition: string }[] = await db.query(
        `SELECT tableoid::regclass::text AS partition FROM deliberation_events WHERE message_id = $1 AND seq = 6`,
        [messageIds[0]],
      );
      expect(late.partition).toBe(weekPartition(weeks[0]).name);

      // Back down: one plain table with every row (the one the stage write added included), then up again.
      await db.undoLastMigration({ transaction: 'each' });
      const [{ kind }]: { kind: string }[] = await db.query(
        `SELECT relkind::text AS kind FROM pg_class WHERE relname = 'deliberation_events'`,
      );
      expect(kind).toBe('r');
      const down = await snapshot(db);
      expect(down).toHaveLength(rowsBefore.length + 1);
      expect(await migrate(databaseUrl)).toEqual(['EventPartitions1764100000000']);
      expect(await snapshot(db)).toEqual(down);
      expect(await orphanEvents(db)).toBe(0);
    });
  });
});

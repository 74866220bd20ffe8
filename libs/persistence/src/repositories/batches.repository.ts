import { randomUUID } from 'node:crypto';
import type {
  BatchAccepted,
  BatchStatus,
  DeliveredEvent,
  Grading,
  MessageStatus,
  ModeName,
} from '@conclave/contracts';
import { In, IsNull, MoreThan, type DataSource, type EntityManager } from 'typeorm';
import { returnedRows } from '../deliberation.store';
import { endRuns } from '../end-runs';
import { BatchEntity, MessageEntity, type BatchRecord } from '../entities';
import { insertItemConversations } from './batch-items';
import { IdempotencyRace, recordResponse, type IdempotencyKey } from './idempotency.repository';

export interface Batch {
  id: string;
  name: string | null;
  status: BatchStatus;
  total: number;
  concurrency: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The batch's budget in US dollars; null when it has none. */
  maxCostUsd: number | null;
}

/** One item of a new batch: a first turn of its own conversation. */
export interface NewBatchItem {
  mode: ModeName;
  /** What the user's message stores (the question, or the mode's rendering of it). */
  userContent: string;
  /** The item's question, when the user's message stores the mode's rendering instead (jury: the content). */
  question?: string;
  config: unknown;
  firstStage: string;
  /** For reports (issue 21): the expected verdict, value, answer or winner; kept in the user message's config. */
  reference?: string | number;
  /** For comparisons (issue 21): the item's name across batches; kept in the user message's config. */
  key?: string;
  /** Issue 37: the expected answer and its grader; kept in the user message's config as `expected`, `grader`. */
  grading?: Grading;
}

export interface NewBatch {
  userId: string;
  name: string | null;
  concurrency: number;
  generateTitles: boolean;
  defaults: unknown;
  items: NewBatchItem[];
  /** No new item starts once the batch's recorded cost reaches this; null for no budget. */
  maxCostUsd?: number | null;
  /** The API key the batch was submitted with (null without one): revoking it cancels the batch. */
  apiKeyId?: string | null;
}

/** A batch item as its results line needs it. */
export interface BatchItem {
  index: number;
  messageId: string;
  conversationId: string;
  mode: ModeName;
  status: MessageStatus;
  error: string | null;
  config: unknown;
  /** The item's question as submitted (for jury, not the content under evaluation). */
  question: string;
  /** Its latest attempt's number (1 unless retried). */
  attempt: number;
  /** The item's `key` as submitted (its user message's config); null when none. */
  key: string | null;
  /** The item's `reference` as submitted: a string or a number; null when none. */
  reference: string | number | null;
  /** A graded item (issue 37): its expected answer as stored (the grader's form); absent when ungraded. */
  grading?: { expected: string | number | null };
}

/** What one dispatch took: items to enqueue (may be none). */
export interface DispatchPick {
  items: { messageId: string; stage: string }[];
  /** Items the pick ended instead (the budget ran out): their stored `cancelled` events, to publish. */
  cancelled?: DeliveredEvent[];
}

/** The columns a Batch is read with. */
const BATCH = {
  id: true,
  name: true,
  status: true,
  total: true,
  concurrency: true,
  createdAt: true,
  startedAt: true,
  finishedAt: true,
  maxCostUsd: true,
} as const;

const toBatch = (r: BatchRecord): Batch => ({
  id: r.id,
  name: r.name,
  status: r.status,
  total: r.total,
  concurrency: r.concurrency,
  createdAt: r.createdAt,
  startedAt: r.startedAt,
  finishedAt: r.finishedAt,
  maxCostUsd: r.maxCostUsd === null ? null : Number(r.maxCostUsd),
});

/** A batch's items are its assistant messages (each item's user message holds its question). */
const ITEM = { role: 'assistant' } as const;

/** Why an item the batch had not started was cancelled when its budget ran out. */
export const budgetCancelReason = (maxCostUsd: number, spentUsd: number): string =>
  `The batch's budget of $${maxCostUsd} (maxCostUsd) was reached ($${spentUsd.toFixed(4)} recorded); this item was not started.`;

/**
 * Batches and their items: what the gateway submits and reads, and what BatchDispatcher moves. Ids
 * given are UUIDs. The plain reads go through the entities; the bulk inserts of `create` (three
 * statements for ten thousand items), the dispatch (`pickItems`), the ending of queued items, the
 * items page (a self-join) and `closeIfDone` stay SQL.
 */
export class BatchesRepository {
  constructor(private readonly dataSource: DataSource) {}

  private get batches() {
    return this.dataSource.getRepository(BatchEntity);
  }

  private get messages() {
    return this.dataSource.getRepository(MessageEntity);
  }

  /** How many of the user's batches are queued or running. */
  activeCount(userId: string): Promise<number> {
    return this.batches.countBy({ userId, status: In(['queued', 'running']) });
  }

  /**
   * Stores the batch, a conversation with its two messages per item, and the idempotency key's
   * response, in one transaction; returns the batch's id. Throws IdempotencyRace when a twin request
   * with the same key stored first.
   */
  async create(batch: NewBatch, idempotency: IdempotencyKey | null): Promise<string> {
    const batchId = randomUUID();
    const { items } = batch;
    await this.dataSource.transaction(async (manager) => {
      await manager.query(
        `INSERT INTO batches (id, user_id, name, status, total, concurrency, generate_titles, defaults, max_cost_usd, api_key_id)
         VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7, $8, $9::uuid)`,
        [
          batchId,
          batch.userId,
          batch.name,
          items.length,
          batch.concurrency,
          batch.generateTitles,
          batch.defaults,
          batch.maxCostUsd ?? null,
          batch.apiKeyId ?? null,
        ],
      );
      // Bulk inserts: ten thousand items are three statements, not thirty thousand. A question the
      // user's message does not hold (it holds the mode's rendering) is kept in its config, and so
      // are the item's report fields.
      const conversationIds = await insertItemConversations(
        manager,
        batch.userId,
        items.map((i) => {
          // What the user message does not hold, and reports read: question, reference, key; and
          // what grading will read: expected, grader.
          const extra = {
            ...(i.question === undefined ? {} : { question: i.question }),
            ...(i.reference === undefined ? {} : { reference: i.reference }),
            ...(i.key === undefined ? {} : { key: i.key }),
            ...(i.grading === undefined ? {} : { expected: i.grading.expected, grader: i.grading.grader }),
          };
          return {
            mode: i.mode,
            content: i.userContent,
            config: Object.keys(extra).length === 0 ? null : JSON.stringify(extra),
          };
        }),
      );
      const messageIds = items.map(() => randomUUID());
      await manager.query(
        `INSERT INTO messages (id, conversation_id, role, content, status, turn, mode, config, stage, needs_title, batch_id, batch_index)
         SELECT id, c, 'assistant', '', 'queued', 1, m, cfg, st, $6, $7, idx - 1
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS t(id, c, m, cfg, st, idx)`,
        [
          messageIds,
          conversationIds,
          items.map((i) => i.mode),
          items.map((i) => JSON.stringify(i.config)),
          items.map((i) => i.firstStage),
          batch.generateTitles,
          batchId,
        ],
      );
      if (idempotency) {
        const accepted: BatchAccepted = { batchId, total: items.length, status: 'queued' };
        await recordResponse(manager, idempotency, accepted);
      }
    });
    return batchId;
  }

  /**
   * Takes back a batch nothing of which ran (none of its items reached the queue): its items'
   * conversations (their messages with them) and the batch row, in one transaction. Its
   * idempotency key is recorded only by `admit`, once the batch is kept.
   */
  async discard(batchId: string): Promise<void> {
    await this.dataSource.transaction((manager) => deleteBatchRows(manager, batchId));
  }

  /**
   * A stored batch's admission, in one transaction (one connection): its idempotency key
   * recorded, its first items picked (pickItems) and handed to `enqueue`. The key's row is
   * inserted first and held until the outcome is known, so a twin request with the same key waits
   * for it and never answers from a batch that is then taken back:
   * - `dispatched`: enqueued, the key recorded;
   * - `twin`: a request with the same key was admitted first (answer what it answered): this
   *   batch was taken back, never dispatched;
   * - `discarded`: `enqueue` threw (`error`): the batch and its key are gone, nothing ran;
   * - `kept`: `enqueue` threw and the take-back failed too (`error`): the batch stays stored with
   *   its key and the workers' reconciler starts it once the queue is back (or, after losing to a
   *   twin, this batch was not taken back and will run).
   * Throws when PostgreSQL fails before the outcome (the batch stays stored, undispatched: the
   * caller takes it back with `discard`).
   */
  async admit(
    batchId: string,
    accepted: BatchAccepted,
    idempotency: IdempotencyKey | null,
    enqueue: (items: { messageId: string; stage: string }[]) => Promise<void>,
  ): Promise<{ kind: 'dispatched' | 'twin' } | { kind: 'discarded' | 'kept'; error: unknown }> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      const manager = runner.manager;
      /** `work` under a savepoint: false (and undone) when it throws. */
      const undoable = async (work: () => Promise<void>): Promise<boolean> => {
        await manager.query('SAVEPOINT take_back');
        try {
          await work();
          await manager.query('RELEASE SAVEPOINT take_back');
          return true;
        } catch {
          await manager.query('ROLLBACK TO SAVEPOINT take_back');
          return false;
        }
      };
      if (idempotency) {
        try {
          await recordResponse(manager, idempotency, accepted);
        } catch (error) {
          if (!(error instanceof IdempotencyRace)) throw error;
          const takenBack = await undoable(() => deleteBatchRows(manager, batchId));
          await runner.commitTransaction();
          return takenBack ? { kind: 'twin' } : { kind: 'kept', error };
        }
      }
      const picked = await pickItemsIn(manager, batchId);
      try {
        if (picked && picked.items.length > 0) await enqueue(picked.items);
      } catch (error) {
        // Its key by its primary key (user, scope, key): the row this transaction holds.
        const takenBack = await undoable(async () => {
          if (idempotency) {
            await manager.query(
              'DELETE FROM idempotency_keys WHERE user_id = $1 AND scope = $2 AND key = $3',
              [idempotency.userId, idempotency.scope, idempotency.key],
            );
          }
          await deleteBatchRows(manager, batchId);
        });
        await runner.commitTransaction();
        return { kind: takenBack ? 'discarded' : 'kept', error };
      }
      await runner.commitTransaction();
      return { kind: 'dispatched' };
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      throw error;
    } finally {
      await runner.release();
    }
  }

  /** The batch, if it is the user's. */
  async owned(userId: string, batchId: string): Promise<Batch | null> {
    const row = await this.batches.findOne({ select: BATCH, where: { id: batchId, userId } });
    return row ? toBatch(row) : null;
  }

  async find(batchId: string): Promise<Batch | null> {
    const row = await this.batches.findOne({ select: BATCH, where: { id: batchId } });
    return row ? toBatch(row) : null;
  }

  /** The user's 200 most recent batches, newest first. */
  async list(userId: string): Promise<Batch[]> {
    const rows = await this.batches.find({
      select: BATCH,
      where: { userId },
      order: { createdAt: 'DESC' },
      take: 200,
    });
    return rows.map(toBatch);
  }

  /**
   * How many of the batch's items are in each status (statuses without items are absent), by each
   * item's latest attempt (an attempt a retry replaced is `superseded_at`).
   */
  async itemCounts(batchId: string): Promise<Partial<Record<MessageStatus, number>>> {
    const rows: { status: MessageStatus; n: number }[] = await this.messages
      .createQueryBuilder('m')
      .select('m.status', 'status')
      .addSelect('COUNT(*)::int', 'n')
      .where({ batchId, ...ITEM, supersededAt: IsNull() })
      .groupBy('m.status')
      .getRawMany();
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  /** How many of the batch's items were retried (their latest attempt is not their first). */
  async retriedCount(batchId: string): Promise<number> {
    return this.messages.countBy({ batchId, ...ITEM, supersededAt: IsNull(), attempt: MoreThan(1) });
  }

  /** Marks the batch cancelled, under the lock dispatchers take (so no dispatch is half-way through it). */
  async markCancelled(batchId: string): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.query(`SELECT id FROM batches WHERE id = $1 FOR NO KEY UPDATE`, [batchId]);
      await manager.query(`UPDATE batches SET status = 'cancelled', cancelled_at = now() WHERE id = $1`, [
        batchId,
      ]);
    });
  }

  /**
   * Cancels the batch's queued items with `reason`; returns their stored `cancelled` events (one
   * per item). An item a worker holds at this instant is starting: it is skipped (instead of
   * waiting on its row lock, which could deadlock with the worker).
   */
  cancelQueuedItems(batchId: string, reason: string): Promise<DeliveredEvent[]> {
    return endRuns(
      this.dataSource,
      {
        sql: `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'
         FOR UPDATE SKIP LOCKED`,
        params: [batchId],
      },
      { kind: 'cancelled', reason },
    );
  }

  /**
   * The batch's items that have not ended (running, or queued and held by a worker when the queued
   * ones were cancelled), with the stage each is at: a cancel stops them one by one.
   */
  async unfinishedItems(batchId: string): Promise<{ messageId: string; stage: string | null }[]> {
    const rows = await this.messages
      .createQueryBuilder('m')
      .select(['m.id', 'm.stage'])
      .where({ batchId, ...ITEM })
      .andWhere('m.status = ANY(conclave_open_statuses())')
      .orderBy('m.batchIndex')
      .getMany();
    return rows.map((r) => ({ messageId: r.id, stage: r.stage }));
  }

  queuedItemCount(batchId: string): Promise<number> {
    return this.messages.countBy({ batchId, ...ITEM, status: 'queued' });
  }

  /** Up to `limit` items (their latest attempts) after the item `afterIndex`, in submission order, with their questions. */
  async itemsPage(batchId: string, afterIndex: number, limit: number): Promise<BatchItem[]> {
    const rows: {
      id: string;
      conversation_id: string;
      mode: ModeName;
      status: MessageStatus;
      error: string | null;
      config: unknown;
      batch_index: number;
      question: string;
      attempt: number;
      key: string | null;
      reference: unknown;
      graded: boolean;
      expected: unknown;
    }[] = await this.dataSource.query(
      `SELECT a.id, a.conversation_id, a.mode, a.status, a.error, a.config, a.batch_index, a.attempt,
         COALESCE(u.config->>'question', u.content) AS question, u.config->>'key' AS key,
         u.config->'reference' AS reference,
         jsonb_typeof(u.config->'grader') IS NOT DISTINCT FROM 'object' AS graded, u.config->'expected' AS expected
       FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.batch_index > $2 AND a.superseded_at IS NULL
       ORDER BY a.batch_index LIMIT $3`,
      [batchId, afterIndex, limit],
    );
    return rows.map((r) => ({
      index: r.batch_index,
      messageId: r.id,
      conversationId: r.conversation_id,
      mode: r.mode,
      status: r.status,
      error: r.error,
      config: r.config,
      question: r.question,
      attempt: r.attempt,
      key: r.key,
      reference: typeof r.reference === 'string' || typeof r.reference === 'number' ? r.reference : null,
      ...(r.graded
        ? {
            grading: {
              expected: typeof r.expected === 'string' || typeof r.expected === 'number' ? r.expected : null,
            },
          }
        : {}),
    }));
  }

  /** Whether any item of the batch is graded (an expected answer with its grader): its exports then have grade columns. */
  async hasGradedItems(batchId: string): Promise<boolean> {
    const [row]: { graded: boolean }[] = await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM messages a
         JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
         WHERE a.batch_id = $1 AND a.role = 'assistant' AND jsonb_typeof(u.config->'grader') = 'object') AS graded`,
      [batchId],
    );
    return row?.graded === true;
  }

  /**
   * Under the batch row lock: marks as dispatched the next queued items that fit in the batch's
   * free slots (its concurrency less the dispatched items still queued or running), in submission
   * order, and the batch running if it was queued. Null when the batch is gone, complete, cancelled
   * or out of budget. A batch with a budget whose recorded cost (every model call of its items, all
   * attempts) has reached it starts nothing more: its items not yet dispatched are cancelled (their
   * `cancelled` events in the answer) and it becomes `budget_exhausted` (items already dispatched
   * finish).
   */
  pickItems(batchId: string): Promise<DispatchPick | null> {
    return this.dataSource.transaction((manager) => pickItemsIn(manager, batchId));
  }

  /** Ends the batch (complete, or cancelled / budget_exhausted if it was) once none of its items is queued or running. */
  async closeIfDone(batchId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE batches SET status = CASE WHEN status IN ('cancelled', 'budget_exhausted') THEN status ELSE 'complete' END,
         finished_at = now()
       WHERE id = $1 AND finished_at IS NULL AND NOT EXISTS (
         SELECT 1 FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = ANY(conclave_open_statuses()))`,
      [batchId],
    );
  }

  /** The oldest 200 batches still queued or running (or out of budget with items still running). */
  async openBatchIds(): Promise<string[]> {
    const rows = await this.batches.find({
      select: { id: true },
      where: [{ status: In(['queued', 'running']) }, { status: 'budget_exhausted', finishedAt: IsNull() }],
      order: { createdAt: 'ASC' },
      take: 200,
    });
    return rows.map((r) => r.id);
  }
}

/** BatchesRepository.pickItems in the caller's transaction. */
/** `BatchesRepository.pickItems` in the caller's transaction (which may hold the batch's lock already). */
export async function pickItemsIn(manager: EntityManager, batchId: string): Promise<DispatchPick | null> {
  const [batch]: {
    status: BatchStatus;
    concurrency: number;
    max_cost_usd: string | null;
  }[] = await manager.query(
    // NO KEY UPDATE: dispatchers exclude each other, but the foreign-key checks of the batch's
    // messages (KEY SHARE) do not wait for them.
    'SELECT status, concurrency, max_cost_usd FROM batches WHERE id = $1 FOR NO KEY UPDATE',
    [batchId],
  );
  if (
    !batch ||
    batch.status === 'complete' ||
    batch.status === 'cancelled' ||
    batch.status === 'budget_exhausted'
  )
    return null;
  if (batch.max_cost_usd !== null) {
    // Only batches with a budget pay for this sum (model_calls by message, messages by batch).
    const [{ spent, reached }]: { spent: string; reached: boolean }[] = await manager.query(
      `SELECT COALESCE(SUM(mc.cost_usd), 0)::text AS spent, COALESCE(SUM(mc.cost_usd), 0) >= $2::numeric AS reached
         FROM model_calls mc JOIN messages m ON m.id = mc.message_id WHERE m.batch_id = $1`,
      [batchId, batch.max_cost_usd],
    );
    if (reached) {
      const cancelled = await endRuns(
        manager,
        {
          sql: `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'
             AND dispatched_at IS NULL`,
          params: [batchId],
        },
        { kind: 'cancelled', reason: budgetCancelReason(Number(batch.max_cost_usd), Number(spent)) },
      );
      await manager.query(`UPDATE batches SET status = 'budget_exhausted' WHERE id = $1`, [batchId]);
      return { items: [], cancelled };
    }
  }
  const [{ inflight }]: { inflight: number }[] = await manager.query(
    `SELECT COUNT(*)::int AS inflight FROM messages WHERE batch_id = $1 AND role = 'assistant'
         AND dispatched_at IS NOT NULL AND status = ANY(conclave_open_statuses())`,
    [batchId],
  );
  const slots = batch.concurrency - inflight;
  if (slots <= 0) return { items: [] };
  const items = returnedRows<{ id: string; stage: string }>(
    await manager.query(
      `UPDATE messages SET dispatched_at = now() WHERE id IN (
           SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND dispatched_at IS NULL
             AND status = 'queued' ORDER BY batch_index LIMIT $2)
         RETURNING id, stage`,
      [batchId, slots],
    ),
  );
  if (items.length > 0) {
    await manager.query(
      `UPDATE batches SET status = 'running', started_at = COALESCE(started_at, now()) WHERE id = $1 AND status = 'queued'`,
      [batchId],
    );
  }
  return { items: items.map((i) => ({ messageId: i.id, stage: i.stage })) };
}

/** A batch's items' conversations (their messages with them) and the batch row. */
async function deleteBatchRows(manager: EntityManager, batchId: string): Promise<void> {
  await manager.query(
    'DELETE FROM conversations WHERE id IN (SELECT conversation_id FROM messages WHERE batch_id = $1)',
    [batchId],
  );
  await manager.query('DELETE FROM batches WHERE id = $1', [batchId]);
}

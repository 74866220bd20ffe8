import { randomUUID } from 'node:crypto';
import type { BatchAccepted, BatchStatus, MessageStatus, ModeName } from '@conclave/contracts';
import type { DataSource } from 'typeorm';
import { returnedRows } from '../deliberation.store';
import { recordResponse, type IdempotencyKey } from './idempotency.repository';

export interface Batch {
  id: string;
  name: string | null;
  status: BatchStatus;
  total: number;
  concurrency: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** One item of a new batch: a first turn of its own conversation. */
export interface NewBatchItem {
  mode: ModeName;
  /** What the user's message stores (the question, or the mode's rendering of it). */
  userContent: string;
  config: unknown;
  firstStage: string;
}

export interface NewBatch {
  userId: string;
  name: string | null;
  concurrency: number;
  generateTitles: boolean;
  defaults: unknown;
  items: NewBatchItem[];
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
  question: string;
}

/** What one dispatch took: items to enqueue (may be none), and whether they owe titles. */
export interface DispatchPick {
  items: { messageId: string; stage: string }[];
  generateTitles: boolean;
}

interface BatchRecord {
  id: string;
  name: string | null;
  status: BatchStatus;
  total: number;
  concurrency: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const BATCH_COLUMNS = 'id, name, status, total, concurrency, created_at, started_at, finished_at';

const toBatch = (r: BatchRecord): Batch => ({
  id: r.id,
  name: r.name,
  status: r.status,
  total: r.total,
  concurrency: r.concurrency,
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
});

/** Batches and their items: what the gateway submits and reads, and what BatchDispatcher moves. Ids given are UUIDs. */
export class BatchesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** How many of the user's batches are queued or running. */
  async activeCount(userId: string): Promise<number> {
    const [{ active }]: { active: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS active FROM batches WHERE user_id = $1 AND status IN ('queued', 'running')`,
      [userId],
    );
    return active;
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
        `INSERT INTO batches (id, user_id, name, status, total, concurrency, generate_titles, defaults)
         VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7)`,
        [
          batchId,
          batch.userId,
          batch.name,
          items.length,
          batch.concurrency,
          batch.generateTitles,
          batch.defaults,
        ],
      );
      const conversationIds = items.map(() => randomUUID());
      const messageIds = items.map(() => randomUUID());
      // Bulk inserts: ten thousand items are three statements, not thirty thousand.
      await manager.query(
        `INSERT INTO conversations (id, user_id, mode) SELECT c, $2, m FROM unnest($1::uuid[], $3::text[]) AS t(c, m)`,
        [conversationIds, batch.userId, items.map((i) => i.mode)],
      );
      await manager.query(
        `INSERT INTO messages (conversation_id, role, content, status, turn, mode)
         SELECT c, 'user', q, 'complete', 1, m FROM unnest($1::uuid[], $2::text[], $3::text[]) AS t(c, q, m)`,
        [conversationIds, items.map((i) => i.userContent), items.map((i) => i.mode)],
      );
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

  /** The batch, if it is the user's. */
  async owned(userId: string, batchId: string): Promise<Batch | null> {
    const [row]: BatchRecord[] = await this.dataSource.query(
      `SELECT ${BATCH_COLUMNS} FROM batches WHERE id = $1 AND user_id = $2`,
      [batchId, userId],
    );
    return row ? toBatch(row) : null;
  }

  async find(batchId: string): Promise<Batch | null> {
    const [row]: BatchRecord[] = await this.dataSource.query(
      `SELECT ${BATCH_COLUMNS} FROM batches WHERE id = $1`,
      [batchId],
    );
    return row ? toBatch(row) : null;
  }

  /** The user's 200 most recent batches, newest first. */
  async list(userId: string): Promise<Batch[]> {
    const rows: BatchRecord[] = await this.dataSource.query(
      `SELECT ${BATCH_COLUMNS} FROM batches WHERE user_id = $1 ORDER BY created_at DESC LIMIT 200`,
      [userId],
    );
    return rows.map(toBatch);
  }

  /** How many of the batch's items are in each status (statuses without items are absent). */
  async itemCounts(batchId: string): Promise<Partial<Record<MessageStatus, number>>> {
    const rows: { status: MessageStatus; n: number }[] = await this.dataSource.query(
      `SELECT status, COUNT(*)::int AS n FROM messages WHERE batch_id = $1 AND role = 'assistant' GROUP BY status`,
      [batchId],
    );
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
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
   * Cancels the batch's queued items; returns how many. An item a worker holds at this instant is
   * starting: it is skipped (instead of waiting on its row lock, which could deadlock with the worker).
   */
  async cancelQueuedItems(batchId: string): Promise<number> {
    const cancelled = returnedRows<{ id: string }>(
      await this.dataSource.query(
        `UPDATE messages SET status = 'cancelled', error = 'The batch was cancelled.', stage = NULL,
           completed_at = now(), updated_at = now()
         WHERE id IN (SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'
                      FOR UPDATE SKIP LOCKED)
         RETURNING id`,
        [batchId],
      ),
    );
    return cancelled.length;
  }

  async queuedItemCount(batchId: string): Promise<number> {
    const [{ queued }]: { queued: number }[] = await this.dataSource.query(
      `SELECT COUNT(*)::int AS queued FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'`,
      [batchId],
    );
    return queued;
  }

  /** Up to `limit` items after the item `afterIndex`, in submission order, with their questions. */
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
    }[] = await this.dataSource.query(
      `SELECT a.id, a.conversation_id, a.mode, a.status, a.error, a.config, a.batch_index, u.content AS question
       FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.batch_index > $2
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
    }));
  }

  /**
   * Under the batch row lock: marks as dispatched the next queued items that fit in the batch's
   * free slots (its concurrency less the dispatched items still queued or running), in submission
   * order, and the batch running if it was queued. Null when the batch is gone, complete or cancelled.
   */
  pickItems(batchId: string): Promise<DispatchPick | null> {
    return this.dataSource.transaction(async (manager) => {
      const [batch]: { status: BatchStatus; concurrency: number; generate_titles: boolean }[] =
        await manager.query(
          // NO KEY UPDATE: dispatchers exclude each other, but the foreign-key checks of the batch's
          // messages (KEY SHARE) do not wait for them.
          'SELECT status, concurrency, generate_titles FROM batches WHERE id = $1 FOR NO KEY UPDATE',
          [batchId],
        );
      if (!batch || batch.status === 'complete' || batch.status === 'cancelled') return null;
      const [{ inflight }]: { inflight: number }[] = await manager.query(
        `SELECT COUNT(*)::int AS inflight FROM messages WHERE batch_id = $1 AND role = 'assistant'
           AND dispatched_at IS NOT NULL AND status IN ('queued', 'running')`,
        [batchId],
      );
      const slots = batch.concurrency - inflight;
      if (slots <= 0) return { items: [], generateTitles: batch.generate_titles };
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
      return {
        items: items.map((i) => ({ messageId: i.id, stage: i.stage })),
        generateTitles: batch.generate_titles,
      };
    });
  }

  /** Ends the batch (complete, or cancelled if it was) once none of its items is queued or running. */
  async closeIfDone(batchId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE batches SET status = CASE WHEN status = 'cancelled' THEN status ELSE 'complete' END,
         finished_at = now()
       WHERE id = $1 AND finished_at IS NULL AND NOT EXISTS (
         SELECT 1 FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status IN ('queued', 'running'))`,
      [batchId],
    );
  }

  /** The oldest 200 batches still queued or running. */
  async openBatchIds(): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM batches WHERE status IN ('queued', 'running') ORDER BY created_at LIMIT 200`,
    );
    return rows.map((r) => r.id);
  }
}

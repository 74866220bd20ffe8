import type { BatchStatus } from '@conclave/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import {
  dropEventPartitionIfEmpty,
  ensureEventPartitions,
  listEventPartitions,
} from '../lifecycle/event-partitions';
import { partitionsAhead, partitionsPastCutoff } from '../lifecycle/plan';
import { noneRemoved, type RemovedCounts } from '../lifecycle/run';

/** What DELETE /api/batches/:id found. */
export type BatchDeletion =
  | { kind: 'deleted'; removed: RemovedCounts }
  | { kind: 'missing' }
  /** The batch has not finished: queued, running, or cancelled / out of budget with items still running. */
  | { kind: 'unfinished'; status: BatchStatus }
  /** The batch has finished, but a follow-up turn in one of its items' conversations is still running. */
  | { kind: 'follow-up-running' };

/** How long the job's partition DDL waits for its lock before leaving the work to the next run. */
const DDL_LOCK_TIMEOUT = '1s';
const LOCK_NOT_AVAILABLE = '55P03';

const count = async (m: EntityManager, sql: string, parameters: unknown[]): Promise<number> => {
  const [{ n }]: { n: number }[] = await m.query(
    `WITH d AS (${sql} RETURNING 1) SELECT count(*)::int AS n FROM d`,
    parameters,
  );
  return n;
};

/**
 * Deletes the conversations `ids` with everything stored for them (messages, stage rows, model
 * calls, events), counting each kind, in the caller's transaction. What their model calls cost
 * stays in their users' monthly spend (removed_spend), as when a user deletes a conversation.
 * Events are deleted naming their partition key, so each message's events are one partition's.
 */
export async function removeConversations(m: EntityManager, ids: readonly string[]): Promise<RemovedCounts> {
  const removed = noneRemoved();
  if (ids.length === 0) return removed;
  const p = [ids];
  // The messages before anything is deleted, in id order: grouped stage writes lock theirs in the
  // same order, so a late write to several of these (a cancelled batch's aborted calls) waits
  // instead of meeting this deletion in a deadlock. The conversations were locked before this
  // (by the caller); a late write that also sets a title locks its conversation after its message,
  // so that pair can still deadlock, and PostgreSQL then refuses one side.
  await m.query('SELECT id FROM messages WHERE conversation_id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', p);
  await m.query(
    `INSERT INTO removed_spend (user_id, month, cost_usd)
     SELECT c.user_id, (date_trunc('month', mc.created_at AT TIME ZONE 'UTC'))::date, SUM(mc.cost_usd)
     FROM conversations c JOIN messages msg ON msg.conversation_id = c.id JOIN model_calls mc ON mc.message_id = msg.id
     WHERE c.id = ANY($1::uuid[]) AND mc.cost_usd > 0
     GROUP BY 1, 2
     ON CONFLICT (user_id, month) DO UPDATE SET cost_usd = removed_spend.cost_usd + EXCLUDED.cost_usd`,
    p,
  );
  removed.events = await count(
    m,
    `DELETE FROM deliberation_events e USING messages msg
     WHERE msg.conversation_id = ANY($1::uuid[]) AND e.message_id = msg.id AND e.message_created_at = msg.created_at`,
    p,
  );
  removed.stage_rows = await count(
    m,
    `DELETE FROM deliberation_stages s USING messages msg
     WHERE msg.conversation_id = ANY($1::uuid[]) AND s.message_id = msg.id`,
    p,
  );
  removed.model_calls = await count(
    m,
    `DELETE FROM model_calls mc USING messages msg
     WHERE msg.conversation_id = ANY($1::uuid[]) AND mc.message_id = msg.id`,
    p,
  );
  removed.messages = await count(m, 'DELETE FROM messages WHERE conversation_id = ANY($1::uuid[])', p);
  removed.conversations = await count(m, 'DELETE FROM conversations WHERE id = ANY($1::uuid[])', p);
  return removed;
}

/** A conversation holds a deliberation that has not ended (in SQL, for conversation `c`). */
const RUNNING_IN = (conversation: string) =>
  `EXISTS (SELECT 1 FROM messages r WHERE r.conversation_id = ${conversation}
     AND r.role = 'assistant' AND r.status = ANY(conclave_open_statuses()))`;

/**
 * A finished batch past retention (in SQL, for batch `b`, cutoff $1): it finished before the
 * cutoff, and none of its items' conversations was active since (a follow-up turn) or still runs.
 */
const BATCH_EXPIRED = `b.finished_at IS NOT NULL AND b.finished_at < $1
  AND NOT EXISTS (SELECT 1 FROM messages bm JOIN conversations bc ON bc.id = bm.conversation_id
    WHERE bm.batch_id = b.id AND (bc.updated_at >= $1 OR ${RUNNING_IN('bc.id')}))`;

/**
 * The data lifecycle (issue 23): deleting a batch with its items, and the steps of the workers'
 * retention job (libs/persistence/src/lifecycle/run.ts runs them). Every deletion is of whole
 * conversations: a conversation ages by its last activity (`conversations.updated_at`, moved by
 * every turn and stage), a batch's items only with their batch.
 */
export class LifecycleRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * DELETE /api/batches/:id, in one transaction: the batch, if it is the user's and has finished,
   * and every conversation of its items (all attempts) with their data. The batch row is locked
   * first, so a retry (which takes the same lock) cannot start its items meanwhile.
   */
  deleteBatch(userId: string, batchId: string): Promise<BatchDeletion> {
    return this.dataSource.transaction(async (m): Promise<BatchDeletion> => {
      const [batch]: { status: BatchStatus; finished_at: Date | null }[] = await m.query(
        'SELECT status, finished_at FROM batches WHERE id = $1 AND user_id = $2 FOR UPDATE',
        [batchId, userId],
      );
      if (!batch) return { kind: 'missing' };
      if (batch.finished_at === null) return { kind: 'unfinished', status: batch.status };
      // Waits for (rather than skips) a conversation another transaction holds: all of them go.
      const conversations = await this.batchConversations(m, batchId, { limit: null, skipLocked: false });
      const [{ running }]: { running: boolean }[] = await m.query(
        `SELECT EXISTS (SELECT 1 FROM conversations c WHERE c.id = ANY($1::uuid[]) AND ${RUNNING_IN('c.id')}) AS running`,
        [conversations],
      );
      if (running) return { kind: 'follow-up-running' };
      const removed = await removeConversations(m, conversations);
      removed.batches = await count(m, 'DELETE FROM batches WHERE id = $1', [batchId]);
      return { kind: 'deleted', removed };
    });
  }

  /** The conversations of the batch's items (every attempt), locked; at most `limit` when given. */
  private async batchConversations(
    m: EntityManager,
    batchId: string,
    options: { limit: number | null; skipLocked: boolean },
  ): Promise<string[]> {
    const { limit, skipLocked } = options;
    const rows: { id: string }[] = await m.query(
      `SELECT c.id FROM conversations c
       WHERE c.id IN (SELECT conversation_id FROM messages WHERE batch_id = $1)
       ORDER BY c.id ${limit === null ? '' : 'LIMIT $2'} FOR UPDATE OF c${skipLocked ? ' SKIP LOCKED' : ''}`,
      limit === null ? [batchId] : [batchId, limit],
    );
    return rows.map((r) => r.id);
  }

  /** Up to `limit` finished batches past the cutoff, oldest first, other than `exclude`. */
  async expiredBatches(cutoff: Date, limit: number, exclude: readonly string[] = []): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT b.id FROM batches b WHERE ${BATCH_EXPIRED} AND NOT (b.id = ANY($3::uuid[]))
       ORDER BY b.finished_at LIMIT $2`,
      [cutoff, limit, exclude],
    );
    return rows.map((r) => r.id);
  }

  /**
   * One transaction of a batch's retention: under the batch's lock (skipped when another holds it),
   * and only while it is still past the cutoff, up to `size` of its conversations; the batch row
   * with the last of them. `done` once the batch is gone or no longer to be deleted.
   */
  batchChunk(
    batchId: string,
    cutoff: Date,
    size: number,
  ): Promise<{ removed: RemovedCounts; done: boolean }> {
    return this.dataSource.transaction(async (m) => {
      const [batch]: { id: string }[] = await m.query(
        `SELECT b.id FROM batches b WHERE b.id = $2 AND ${BATCH_EXPIRED} FOR UPDATE OF b SKIP LOCKED`,
        [cutoff, batchId],
      );
      if (!batch) return { removed: noneRemoved(), done: true };
      const conversations = await this.batchConversations(m, batchId, { limit: size, skipLocked: true });
      const removed = await removeConversations(m, conversations);
      const [{ left }]: { left: boolean }[] = await m.query(
        'SELECT EXISTS (SELECT 1 FROM messages WHERE batch_id = $1) AS left',
        [batchId],
      );
      if (!left) removed.batches = await count(m, 'DELETE FROM batches WHERE id = $1', [batchId]);
      return { removed, done: !left || conversations.length === 0 };
    });
  }

  /**
   * One transaction of retention outside batches: up to `size` conversations whose last activity
   * is before the cutoff, with no deliberation queued or running and no batch item, oldest first
   * (per user, along idx_conversations_user); rows another transaction holds are skipped.
   */
  conversationsChunk(cutoff: Date, size: number): Promise<RemovedCounts> {
    return this.dataSource.transaction(async (m) => {
      const rows: { id: string }[] = await m.query(
        `SELECT c.id FROM users u CROSS JOIN LATERAL (
           SELECT c.id FROM conversations c
           WHERE c.user_id = u.id AND c.updated_at < $1
             AND NOT EXISTS (SELECT 1 FROM messages x WHERE x.conversation_id = c.id
               AND (x.batch_id IS NOT NULL OR (x.role = 'assistant' AND x.status = ANY(conclave_open_statuses()))))
           ORDER BY c.updated_at LIMIT $2
           FOR UPDATE OF c SKIP LOCKED) c
         LIMIT $2`,
        [cutoff, size],
      );
      return removeConversations(
        m,
        rows.map((r) => r.id),
      );
    });
  }

  /** Creates this week's event partition and the ones ahead that are missing; returns their names. */
  ensureEventPartitions(now: Date): Promise<string[]> {
    return this.withDdlLock((m) => ensureEventPartitions(m, partitionsAhead(now)), []);
  }

  /** Drops the weekly event partitions wholly before the cutoff that no message needs any more. */
  async dropEventPartitions(cutoff: Date): Promise<string[]> {
    const dropped: string[] = [];
    for (const partition of partitionsPastCutoff(await listEventPartitions(this.dataSource), cutoff)) {
      if (await this.withDdlLock((m) => dropEventPartitionIfEmpty(m, partition), false)) {
        dropped.push(partition.name);
      }
    }
    return dropped;
  }

  /**
   * Partition DDL locks the whole events table for an instant; waiting behind a long transaction
   * would hold every event write up meanwhile. So it gives up after DDL_LOCK_TIMEOUT and answers
   * `fallback`: the next run tries again (partitions are made weeks ahead).
   */
  private async withDdlLock<T>(work: (m: EntityManager) => Promise<T>, fallback: T): Promise<T> {
    try {
      return await this.dataSource.transaction(async (m) => {
        await m.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
        return work(m);
      });
    } catch (error) {
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) return fallback;
      throw error;
    }
  }
}

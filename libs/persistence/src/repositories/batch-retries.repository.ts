import { randomUUID } from 'node:crypto';
import type { BatchStatus, ModeName } from '@conclave/contracts';
import type { DataSource } from 'typeorm';
import { insertItemConversations } from './batch-items';
import { pickItemsIn } from './batches.repository';

/** How a retry of a batch's failed items went. */
export type RetryOutcome =
  | { kind: 'retried'; count: number }
  /** The batch has not finished: nothing was changed. */
  | { kind: 'unfinished'; status: BatchStatus }
  /** No item's latest attempt failed. */
  | { kind: 'none' }
  /** The batch's recorded cost has reached its maxCostUsd: a retry would start nothing. */
  | { kind: 'over-budget'; maxCostUsd: number; spentUsd: number }
  /** `enqueue` threw (the queue cannot take the attempts): nothing was stored, the batch is as it was. */
  | { kind: 'refused'; error: unknown }
  | { kind: 'missing' };

/** The queue refused the retry's first attempts: the transaction is rolled back. */
class EnqueueRefused extends Error {
  constructor(readonly reason: unknown) {
    super('the queue refused the retried items');
  }
}

/**
 * Retrying a finished batch's failed items. Each failed item gets a new attempt: a new
 * conversation (the user's message copied) whose assistant message carries the same batch_id and
 * batch_index, the next attempt number, and starts queued at its mode's first stage. The failed
 * attempt is kept (its conversation, calls and cost stay) and marked superseded, so counts,
 * exports and the batch view read each item's latest attempt. The batch runs again: status
 * `running`, not finished, and the dispatcher starts the new attempts in submission order.
 */
export class BatchRetriesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * `apiKeyId`: the key the retry came with (null without one). The batch is that key's work from
   * now on: revoking it cancels the retry, and revoking the key that submitted the batch no longer does.
   * `admit` is told how many items would run again, under the batch's lock, and throws to refuse
   * the retry (nothing is stored then): the caller's batch-item limit.
   * `enqueue`, when given, is handed the retry's first attempts (as a dispatch picks them) in the
   * same transaction: when it throws, the retry is rolled back (`refused`: failed items still
   * failed, the batch finished as it was) and a job that did reach the queue finds no message.
   */
  retryFailed(
    batchId: string,
    firstStageOf: (mode: ModeName) => string,
    apiKeyId: string | null = null,
    admit: (items: number) => Promise<void> = async () => undefined,
    enqueue?: (items: { messageId: string; stage: string }[]) => Promise<void>,
  ): Promise<RetryOutcome> {
    return this.dataSource
      .transaction(async (manager): Promise<RetryOutcome> => {
        // The lock dispatchers and cancels take: nothing moves the batch while this runs.
        const [batch]: {
          user_id: string;
          status: BatchStatus;
          finished_at: Date | null;
          generate_titles: boolean;
          max_cost_usd: string | null;
        }[] = await manager.query(
          `SELECT user_id, status, finished_at, generate_titles, max_cost_usd FROM batches WHERE id = $1 FOR NO KEY UPDATE`,
          [batchId],
        );
        if (!batch) return { kind: 'missing' };
        if (batch.finished_at === null || batch.status === 'queued' || batch.status === 'running') {
          return { kind: 'unfinished', status: batch.status };
        }
        if (batch.max_cost_usd !== null) {
          const [{ spent, reached }]: { spent: string; reached: boolean }[] = await manager.query(
            `SELECT COALESCE(SUM(mc.cost_usd), 0)::text AS spent, COALESCE(SUM(mc.cost_usd), 0) >= $2::numeric AS reached
           FROM model_calls mc JOIN messages m ON m.id = mc.message_id WHERE m.batch_id = $1`,
            [batchId, batch.max_cost_usd],
          );
          if (reached)
            return { kind: 'over-budget', maxCostUsd: Number(batch.max_cost_usd), spentUsd: Number(spent) };
        }
        const failed: {
          id: string;
          mode: ModeName;
          config: unknown;
          batch_index: number;
          attempt: number;
          user_content: string;
          user_config: unknown;
        }[] = await manager.query(
          `SELECT a.id, a.mode, a.config, a.batch_index, a.attempt, u.content AS user_content, u.config AS user_config
         FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
         WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.superseded_at IS NULL AND a.status = 'failed'
         ORDER BY a.id FOR UPDATE OF a`,
          [batchId],
        );
        // Locked in id order, as grouped stage writes lock theirs; retried in the batch's order.
        failed.sort((x, y) => x.batch_index - y.batch_index);
        if (failed.length === 0) return { kind: 'none' };
        await admit(failed.length);
        const conversationIds = await insertItemConversations(
          manager,
          batch.user_id,
          failed.map((f) => ({
            mode: f.mode,
            content: f.user_content,
            config: f.user_config === null ? null : JSON.stringify(f.user_config),
          })),
        );
        const messageIds = failed.map(() => randomUUID());
        await manager.query(
          `INSERT INTO messages (id, conversation_id, role, content, status, turn, mode, config, stage, needs_title,
           batch_id, batch_index, attempt)
         SELECT id, c, 'assistant', '', 'queued', 1, m, cfg, st, $6, $7, idx, att
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $8::int[], $9::int[])
           AS t(id, c, m, cfg, st, idx, att)`,
          [
            messageIds,
            conversationIds,
            failed.map((f) => f.mode),
            failed.map((f) => JSON.stringify(f.config)),
            failed.map((f) => firstStageOf(f.mode)),
            batch.generate_titles,
            batchId,
            failed.map((f) => f.batch_index),
            failed.map((f) => f.attempt + 1),
          ],
        );
        await manager.query(`UPDATE messages SET superseded_at = now() WHERE id = ANY($1::uuid[])`, [
          failed.map((f) => f.id),
        ]);
        await manager.query(
          `UPDATE batches SET status = 'running', finished_at = NULL, api_key_id = $2::uuid WHERE id = $1`,
          [batchId, apiKeyId],
        );
        if (enqueue) {
          const picked = await pickItemsIn(manager, batchId);
          if (picked && picked.items.length > 0) {
            await enqueue(picked.items).catch((error: unknown) => {
              throw new EnqueueRefused(error);
            });
          }
        }
        return { kind: 'retried', count: failed.length };
      })
      .catch((error: unknown): RetryOutcome => {
        if (error instanceof EnqueueRefused) return { kind: 'refused', error: error.reason };
        throw error;
      });
  }
}

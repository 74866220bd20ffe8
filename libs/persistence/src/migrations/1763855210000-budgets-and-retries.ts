import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 21, cost during and retries:
 * - `batches.max_cost_usd`: no new item starts once the batch's recorded cost reaches it; the batch
 *   then ends `budget_exhausted`.
 * - `users.monthly_budget_usd`: set by an admin; over it, new deliberations and batches answer 402.
 * - `removed_spend`: what the model calls of deleted conversations cost, per user and month, so
 *   that deleting conversations does not lower the month's spend.
 * - `messages.attempt` / `superseded_at`: a batch item retried (POST /api/batches/:id/retry-failed)
 *   gets a new attempt — a new conversation whose assistant message has the same batch_id and
 *   batch_index and the next attempt number; the earlier attempt is kept, marked superseded.
 */
export class BudgetsAndRetries1763855210000 implements MigrationInterface {
  name = 'BudgetsAndRetries1763855210000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE batches ADD COLUMN max_cost_usd numeric NULL
         CONSTRAINT batches_max_cost_check CHECK (max_cost_usd IS NULL OR max_cost_usd > 0)`,
    );
    await q.query('ALTER TABLE batches DROP CONSTRAINT IF EXISTS batches_status_check');
    await q.query(
      `ALTER TABLE batches ADD CONSTRAINT batches_status_check
         CHECK (status IN ('queued', 'running', 'complete', 'cancelled', 'budget_exhausted'))`,
    );
    await q.query(
      `ALTER TABLE users ADD COLUMN monthly_budget_usd numeric NULL
         CONSTRAINT users_monthly_budget_check CHECK (monthly_budget_usd IS NULL OR monthly_budget_usd >= 0)`,
    );
    await q.query(`CREATE TABLE removed_spend (
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      month date NOT NULL,
      cost_usd numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (user_id, month))`);
    await q.query(
      `ALTER TABLE messages ADD COLUMN attempt int NOT NULL DEFAULT 1,
         ADD COLUMN superseded_at timestamptz NULL`,
    );
    await q.query('DROP INDEX uq_messages_batch_item');
    await q.query(
      `CREATE UNIQUE INDEX uq_messages_batch_item ON messages(batch_id, batch_index, attempt) WHERE batch_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX uq_messages_batch_item');
    await q.query(
      'DELETE FROM conversations WHERE id IN (SELECT conversation_id FROM messages WHERE attempt > 1)',
    );
    await q.query(
      `CREATE UNIQUE INDEX uq_messages_batch_item ON messages(batch_id, batch_index) WHERE batch_id IS NOT NULL`,
    );
    await q.query('ALTER TABLE messages DROP COLUMN superseded_at, DROP COLUMN attempt');
    await q.query('DROP TABLE removed_spend');
    await q.query('ALTER TABLE users DROP COLUMN monthly_budget_usd');
    await q.query(`UPDATE batches SET status = 'cancelled' WHERE status = 'budget_exhausted'`);
    await q.query('ALTER TABLE batches DROP CONSTRAINT batches_status_check');
    await q.query(
      `ALTER TABLE batches ADD CONSTRAINT batches_status_check
         CHECK (status IN ('queued', 'running', 'complete', 'cancelled'))`,
    );
    await q.query('ALTER TABLE batches DROP COLUMN max_cost_usd');
  }
}

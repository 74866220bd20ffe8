import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Batches1763800000000 implements MigrationInterface {
  name = 'Batches1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE batches (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name text NULL,
      status text NOT NULL CHECK (status IN ('queued', 'running', 'complete', 'cancelled')),
      total int NOT NULL,
      concurrency int NOT NULL,
      generate_titles boolean NOT NULL DEFAULT false,
      defaults jsonb NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz NULL,
      finished_at timestamptz NULL,
      cancelled_at timestamptz NULL)`);
    await q.query(`CREATE INDEX idx_batches_user ON batches(user_id, created_at DESC)`);
    await q.query(`ALTER TABLE messages
      ADD COLUMN batch_id uuid NULL REFERENCES batches(id) ON DELETE CASCADE,
      ADD COLUMN batch_index int NULL,
      ADD COLUMN dispatched_at timestamptz NULL`);
    await q.query(
      `CREATE UNIQUE INDEX uq_messages_batch_item ON messages(batch_id, batch_index) WHERE batch_id IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX idx_messages_batch_status ON messages(batch_id, status) WHERE batch_id IS NOT NULL`,
    );
    await q.query(`CREATE TABLE idempotency_keys (
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      scope text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      response jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, scope, key))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE idempotency_keys');
    await q.query('DROP INDEX idx_messages_batch_status');
    await q.query('DROP INDEX uq_messages_batch_item');
    await q.query(
      'ALTER TABLE messages DROP COLUMN dispatched_at, DROP COLUMN batch_index, DROP COLUMN batch_id',
    );
    await q.query('DROP TABLE batches');
  }
}

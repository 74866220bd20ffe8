import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 32, revocation stops the work: which API key started a deliberation (its assistant
 * message) or a batch, so revoking the key can cancel what it still has queued or running. NULL for
 * work started without a key (AUTH_MODE=none) and for rows older than this migration.
 *
 * No foreign key: keys are revoked, never deleted, and a reference would make every delete of a
 * user scan `messages` for each of its keys. The indexes hold only work that has not ended, so they
 * stay as small as the work in flight; they are what a revocation (and the workers' reconciler,
 * which looks for work of revoked keys) reads.
 */
export class WorkByKey1764450000000 implements MigrationInterface {
  name = 'WorkByKey1764450000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE messages ADD COLUMN api_key_id uuid NULL');
    await q.query('ALTER TABLE batches ADD COLUMN api_key_id uuid NULL');
    await q.query(
      `CREATE INDEX idx_messages_open_by_key ON messages(api_key_id)
       WHERE api_key_id IS NOT NULL AND status IN ('queued', 'running')`,
    );
    await q.query(
      `CREATE INDEX idx_batches_open_by_key ON batches(api_key_id)
       WHERE api_key_id IS NOT NULL AND finished_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX idx_batches_open_by_key');
    await q.query('DROP INDEX idx_messages_open_by_key');
    await q.query('ALTER TABLE batches DROP COLUMN api_key_id');
    await q.query('ALTER TABLE messages DROP COLUMN api_key_id');
  }
}

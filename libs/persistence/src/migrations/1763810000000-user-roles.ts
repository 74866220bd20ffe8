import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Admin-only routes (Bull Board at /admin/queues) need to know who is an operator; keys are looked
 * up by their public prefix and compared in constant time.
 */
export class UserRoles1763810000000 implements MigrationInterface {
  name = 'UserRoles1763810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'user' CONSTRAINT users_role_check CHECK (role IN ('user', 'admin'))`,
    );
    await q.query('CREATE INDEX idx_api_keys_prefix ON api_keys(key_prefix)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX idx_api_keys_prefix');
    await q.query('ALTER TABLE users DROP COLUMN role');
  }
}

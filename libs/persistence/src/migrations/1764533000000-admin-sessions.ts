import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 33, the admin dashboard's sign-in: a session token of its own instead of the admin API key
 * in a cookie. Only the token's SHA-256 is stored; a session belongs to the key it was opened with
 * and is valid while that key is not revoked and the session has not expired. In PostgreSQL so that
 * every gateway replica sees the same sessions.
 */
export class AdminSessions1764533000000 implements MigrationInterface {
  name = 'AdminSessions1764533000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE admin_sessions (
      token_hash text PRIMARY KEY,
      api_key_id uuid NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL)`);
    await q.query('CREATE INDEX idx_admin_sessions_expiry ON admin_sessions(expires_at)');
    await q.query('CREATE INDEX idx_admin_sessions_key ON admin_sessions(api_key_id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE admin_sessions');
  }
}

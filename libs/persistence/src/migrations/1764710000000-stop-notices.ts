import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every stop announced by PostgreSQL itself: a trigger on `messages` sends
 * `NOTIFY conclave_stops, '<message id>'` in the transaction that stores a deliberation as
 * cancelled, whoever writes it. Workers LISTEN on a connection of their own, so a stop reaches them
 * when it commits even when the process that stopped it could not reach Redis. Frozen: the text
 * this migration ran; the live text is libs/persistence/src/sql/stop-notices.function.ts.
 */
export const STOP_NOTICE_1764710000000 = `
CREATE OR REPLACE FUNCTION conclave_notify_stop() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('conclave_stops', NEW.id::text);
  RETURN NULL;
END
$fn$`;

export class StopNotices1764710000000 implements MigrationInterface {
  name = 'StopNotices1764710000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(STOP_NOTICE_1764710000000);
    await q.query(`CREATE TRIGGER messages_stop_notice AFTER UPDATE OF status ON messages
      FOR EACH ROW WHEN (NEW.status = 'cancelled' AND OLD.status IS DISTINCT FROM 'cancelled')
      EXECUTE FUNCTION conclave_notify_stop()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER messages_stop_notice ON messages');
    await q.query('DROP FUNCTION conclave_notify_stop()');
  }
}

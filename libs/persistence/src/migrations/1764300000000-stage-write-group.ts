import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 23, group commit across deliberations: conclave_stage_write_group(writes jsonb) makes
 * several deliberations' stage writes in one statement (each a `{ "m": message id, "p": the
 * write }`, in the order given) and answers `(n, result)` per write. Its lock_timeout bounds how
 * long one write waiting on another writer's row lock (a batch being deleted, say) can hold up
 * the rest of its group: past it the statement fails with lock_not_available (55P03), nothing is
 * written, and the worker makes each write on its own (GroupedWrites).
 *
 * Frozen: the text this migration ran; the live text is
 * libs/persistence/src/sql/stage-write-group.function.ts.
 */
export const STAGE_WRITE_GROUP_1764300000000 = `
CREATE OR REPLACE FUNCTION conclave_stage_write_group(p_writes jsonb)
RETURNS TABLE (n int, result jsonb)
LANGUAGE plpgsql SET lock_timeout = '1s' AS $fn$
BEGIN
  RETURN QUERY
    SELECT w.n::int, conclave_stage_write((w.e->>'m')::uuid, w.e->'p')
    FROM jsonb_array_elements(p_writes) WITH ORDINALITY AS w(e, n)
    ORDER BY w.n;
END
$fn$`;

export class StageWriteGroup1764300000000 implements MigrationInterface {
  name = 'StageWriteGroup1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(STAGE_WRITE_GROUP_1764300000000);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP FUNCTION IF EXISTS conclave_stage_write_group(jsonb)');
  }
}

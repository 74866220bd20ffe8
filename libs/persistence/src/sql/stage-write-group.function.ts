/**
 * conclave_stage_write_group(writes jsonb): several deliberations' stage writes in one statement
 * (each a `{ "m": message id, "p": the write }`, in the order given), answering `(n, result)` per
 * write; GroupedWrites (grouped-writes.ts) calls it. Its lock_timeout bounds how long one write
 * waiting on another writer's row lock can hold up the rest of its group: past it the statement
 * fails with lock_not_available (55P03), nothing is written, and the worker makes each write on
 * its own.
 *
 * The live text, its one home; migration 1764300000000 carries the text it ran, frozen. To change
 * the function: edit it here and add a migration with a frozen copy (migrations.db-spec.ts checks a
 * migrated database defines exactly this text).
 */
export const STAGE_WRITE_GROUP_FUNCTION = `
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

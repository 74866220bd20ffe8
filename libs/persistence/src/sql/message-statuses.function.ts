/**
 * The statuses of a deliberation (its assistant message) in SQL, once: `conclave_terminal_statuses()`
 * are the ones it ends in (TERMINAL_STATUSES in @conclave/contracts), `conclave_open_statuses()`
 * the others, the ones work still moves on from. Queries say `status = ANY(conclave_open_statuses())`
 * instead of a literal list. Both are IMMUTABLE SQL functions without arguments, so the planner
 * folds a call into the constant array at plan time: the same plan as the literal list (a partial
 * index on `status IN ('queued', 'running')` still matches), no call per row.
 *
 * The live text, its one home; migration 1764600000000 carries the text it ran, frozen.
 * migrations.db-spec.ts checks a migrated database defines exactly this text and that it agrees with
 * the TypeScript list.
 */
export const MESSAGE_STATUSES_FUNCTIONS = `
CREATE OR REPLACE FUNCTION conclave_terminal_statuses() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$ SELECT ARRAY['complete', 'failed', 'cancelled'] $fn$;
CREATE OR REPLACE FUNCTION conclave_open_statuses() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$ SELECT ARRAY['queued', 'running'] $fn$`;

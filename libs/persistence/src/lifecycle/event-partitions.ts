import {
  boundLiteral,
  DEFAULT_EVENT_PARTITION,
  EVENTS_TABLE,
  missingPartitions,
  type EventPartitionRange,
  type ExistingPartition,
} from './plan';

/**
 * Anything that runs SQL: a DataSource, an EntityManager inside a transaction, a migration's
 * QueryRunner. Partition DDL runs through this at migrate time and in the workers' job alike.
 */
export interface Queryable {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

const rows = async <T>(q: Queryable, sql: string, parameters?: unknown[]): Promise<T[]> =>
  (await q.query(sql, parameters)) as T[];

/** A partition name this module made (or the default one): safe to put in DDL unquoted. */
function checkedName(name: string): string {
  if (!/^deliberation_events_(w\d{8}|default)$/.test(name))
    throw new Error(`not an event partition name: ${name}`);
  return name;
}

/** The partitions of `deliberation_events` with their bounds (null for the default partition). */
export async function listEventPartitions(q: Queryable): Promise<ExistingPartition[]> {
  const found = await rows<{ name: string; from: Date | null; to: Date | null }>(
    q,
    `SELECT c.relname AS name, b[1]::timestamptz AS "from", b[2]::timestamptz AS "to"
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
       'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b
     WHERE i.inhparent = $1::regclass
     ORDER BY 2 NULLS FIRST`,
    [EVENTS_TABLE],
  );
  return found.map((p) => ({ name: p.name, from: p.from, to: p.to }));
}

/** The partition that takes what no weekly partition does; created with the table. */
export async function createDefaultEventPartition(q: Queryable): Promise<void> {
  await q.query(`CREATE TABLE IF NOT EXISTS ${DEFAULT_EVENT_PARTITION} PARTITION OF ${EVENTS_TABLE} DEFAULT`);
}

/**
 * Creates one weekly partition. Rows of its range that went to the default partition meanwhile
 * (when no partition existed for them) are moved into it first: PostgreSQL would otherwise refuse
 * the new partition. Run inside a transaction (the move and the attach are one step).
 */
export async function createEventPartition(
  q: Queryable,
  range: EventPartitionRange,
): Promise<'created' | 'moved'> {
  const name = checkedName(range.name);
  const bounds = `FROM (${boundLiteral(range.from)}) TO (${boundLiteral(range.to)})`;
  const [stray] = await rows<{ found: boolean }>(
    q,
    `SELECT EXISTS (SELECT 1 FROM ${DEFAULT_EVENT_PARTITION}
       WHERE message_created_at >= $1 AND message_created_at < $2) AS found`,
    [range.from, range.to],
  );
  if (!stray?.found) {
    await q.query(`CREATE TABLE ${name} PARTITION OF ${EVENTS_TABLE} FOR VALUES ${bounds}`);
    return 'created';
  }
  await q.query(`CREATE TABLE ${name} (LIKE ${EVENTS_TABLE} INCLUDING DEFAULTS)`);
  await q.query(
    `WITH moved AS (DELETE FROM ${DEFAULT_EVENT_PARTITION}
       WHERE message_created_at >= $1 AND message_created_at < $2 RETURNING *)
     INSERT INTO ${name} SELECT * FROM moved`,
    [range.from, range.to],
  );
  // Builds the partition's indexes and checks its rows against the foreign key and the bounds.
  await q.query(`ALTER TABLE ${EVENTS_TABLE} ATTACH PARTITION ${name} FOR VALUES ${bounds}`);
  return 'moved';
}

/** Creates the wanted partitions that do not exist yet; returns the names created. */
export async function ensureEventPartitions(
  q: Queryable,
  wanted: readonly EventPartitionRange[],
): Promise<string[]> {
  const missing = missingPartitions(await listEventPartitions(q), wanted);
  for (const range of missing) await createEventPartition(q, range);
  return missing.map((r) => r.name);
}

/**
 * Drops a weekly partition once no message of its range is left (so, by the foreign key, no row of
 * it either: retention deleted them with their conversations). New messages are created now, so a
 * range found empty stays empty. Returns whether it was dropped. Run inside a transaction.
 */
export async function dropEventPartitionIfEmpty(
  q: Queryable,
  partition: { name: string; from: Date; to: Date },
): Promise<boolean> {
  const name = checkedName(partition.name);
  const [left] = await rows<{ found: boolean }>(
    q,
    'SELECT EXISTS (SELECT 1 FROM messages WHERE created_at >= $1 AND created_at < $2) AS found',
    [partition.from, partition.to],
  );
  if (left?.found) return false;
  await q.query(`DROP TABLE ${name}`);
  return true;
}

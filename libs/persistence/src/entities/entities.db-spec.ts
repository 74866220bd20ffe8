import type { DataSource } from 'typeorm';
import {
  dropDatabases,
  scratchDatabase,
  scratchDatabaseUrl,
  type ScratchDatabase,
} from '../../../../test/support/database';
import { createDataSource, ensureDatabase } from '../data-source';
import { ENTITIES } from './index';

/**
 * The entities (entities/) and the migrations describe the same schema: TypeORM's schema builder,
 * run against a migrated database, finds nothing to change; and the schema TypeORM builds from the
 * entities alone has the columns, constraints and indexes the migrations built, as PostgreSQL
 * itself writes them back (pg_get_constraintdef, pg_get_indexdef).
 *
 * What the entities do not describe (docs/ARCHITECTURE.md, Persistence):
 * - `presets` has no primary key, only the unique (user_id, name); TypeORM needs primary columns,
 *   so the entity marks those two, and the one change the schema builder asks for is that key;
 * - uq_deliberation_stages_once indexes expressions (COALESCE(model, '') ...): the entity lists it
 *   with synchronize: false, so TypeORM neither builds nor checks it;
 * - the DESC of idx_batches_user and idx_conversations_user (TypeORM keeps no column order);
 * - deliberation_events is partitioned: TypeORM sees the parent table; the partitions, the
 *   functions and the trigger are the migrations' alone (migrations.db-spec.ts checks the functions).
 */

/** The one change the schema builder finds: the primary key `presets` lacks (its unique (user_id, name) stands for it). */
const PRESETS_PRIMARY_KEY =
  /^ALTER TABLE "presets" ADD CONSTRAINT "PK_\w+" PRIMARY KEY \("user_id", "name"\)$/;

let migrated: ScratchDatabase;
let synchronizedUrl: string;
let synchronized: DataSource;

beforeAll(async () => {
  migrated = await scratchDatabase({ prefix: 'conclave_en', poolSize: 2 });
  synchronizedUrl = scratchDatabaseUrl('conclave_en');
  await ensureDatabase(synchronizedUrl);
  synchronized = createDataSource(synchronizedUrl, 2);
  await synchronized.initialize();
  await synchronized.synchronize();
});

afterAll(async () => {
  await synchronized?.destroy().catch(() => undefined);
  if (synchronizedUrl) await dropDatabases(synchronizedUrl);
  await migrated?.drop();
});

const tables = ENTITIES.map((entity) => entity.options.tableName ?? entity.options.name).sort();

/** Each table's columns: type, nullability, default. */
async function columns(db: DataSource): Promise<string[]> {
  const rows: { line: string }[] = await db.query(
    `SELECT table_name || '.' || column_name || ' ' || data_type || CASE WHEN is_nullable = 'NO' THEN ' NOT NULL' ELSE '' END
       || COALESCE(' DEFAULT ' || column_default, '') AS line
     FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ANY($1) ORDER BY 1`,
    [tables],
  );
  // TypeORM writes a numeric default 0 as '0'::numeric, the migrations as 0: the same value.
  return rows.map((r) => r.line.replace(/ DEFAULT '(\d+)'::numeric$/, ' DEFAULT $1'));
}

/** Each table's constraints (primary keys, uniques, foreign keys, checks) by name, as PostgreSQL writes them. */
async function constraints(db: DataSource): Promise<string[]> {
  const rows: { line: string }[] = await db.query(
    `SELECT c.relname || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid) AS line
     FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relname = ANY($1) ORDER BY 1`,
    [tables],
  );
  return rows.map((r) => r.line);
}

/** Each table's indexes that back no constraint, as PostgreSQL writes them. */
async function indexes(db: DataSource): Promise<string[]> {
  const rows: { line: string }[] = await db.query(
    `SELECT pg_get_indexdef(i.indexrelid) AS line
     FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relname = ANY($1)
       AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
     ORDER BY 1`,
    [tables],
  );
  return rows.map((r) => r.line);
}

describe('entities and migrations', () => {
  it('describe every table of the migrated schema', async () => {
    const rows: { table_name: string }[] = await migrated.db.query(
      `SELECT table_name FROM information_schema.tables
       WHERE table_schema = 'public' AND table_name <> 'typeorm_migrations'
         AND table_name NOT LIKE 'deliberation\\_events\\_%' ORDER BY 1`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(tables);
  });

  it("TypeORM's schema builder finds nothing to change in a migrated database (but the primary key presets lacks)", async () => {
    const { upQueries } = await migrated.db.driver.createSchemaBuilder().log();
    const queries = upQueries.map((q) => q.query.trim());
    expect(queries).toHaveLength(1);
    expect(queries[0]).toMatch(PRESETS_PRIMARY_KEY);
  });

  it('the schema TypeORM builds from the entities has the same columns as the migrated one', async () => {
    expect(await columns(synchronized)).toEqual(await columns(migrated.db));
  });

  it('... the same constraints (presets: a primary key where the migrated table has its unique)', async () => {
    const built = (await constraints(synchronized)).map((line) =>
      line.replace(/^presets PK_\w+ PRIMARY KEY /, 'presets uq_presets_user_name UNIQUE '),
    );
    expect(built.sort()).toEqual(await constraints(migrated.db));
  });

  it('... and the same indexes (but the expression index and the DESC of two)', async () => {
    const described = (lines: string[]) =>
      lines
        .filter((line) => !line.includes('uq_deliberation_stages_once'))
        .map((line) => line.replace(/ DESC\)/g, ')'));
    expect(described(await indexes(synchronized))).toEqual(described(await indexes(migrated.db)));
  });
});

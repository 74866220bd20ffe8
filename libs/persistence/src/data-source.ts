import { DataSource, type DataSourceOptions } from 'typeorm';
import { InitialSchema1763780000000 } from './migrations/1763780000000-initial-schema';
import { StageParticipant1763790000000 } from './migrations/1763790000000-stage-participant';
import { Batches1763800000000 } from './migrations/1763800000000-batches';
import { UserRoles1763810000000 } from './migrations/1763810000000-user-roles';
import { StageWrite1763820000000 } from './migrations/1763820000000-stage-write';
import { StageWriteOnly1763830000000 } from './migrations/1763830000000-stage-write-only';
import { CallFinishReason1763840000000 } from './migrations/1763840000000-call-finish-reason';
import { BudgetsAndRetries1763855210000 } from './migrations/1763855210000-budgets-and-retries';
import { Presets1764000000000 } from './migrations/1764000000000-presets';
import { EventPartitions1764100000000 } from './migrations/1764100000000-event-partitions';
import { StageWriteCompact1764200000000 } from './migrations/1764200000000-stage-write-compact';
import { StageWriteGroup1764300000000 } from './migrations/1764300000000-stage-write-group';
import { WorkByKey1764450000000 } from './migrations/1764450000000-work-by-key';
import { AdminSessions1764533000000 } from './migrations/1764533000000-admin-sessions';
import { MessageStatuses1764600000000 } from './migrations/1764600000000-message-statuses';
import { StopNotices1764710000000 } from './migrations/1764710000000-stop-notices';
import { ENTITIES } from './entities';
import { StageWriteLoaded1764800000000 } from './migrations/1764800000000-stage-write-loaded';
import { StageWriteAsSent1764900000000 } from './migrations/1764900000000-stage-write-as-sent';
import { ensureEventPartitions } from './lifecycle/event-partitions';
import { partitionsAhead } from './lifecycle/plan';

export const MIGRATIONS = [
  InitialSchema1763780000000,
  StageParticipant1763790000000,
  Batches1763800000000,
  UserRoles1763810000000,
  StageWrite1763820000000,
  StageWriteOnly1763830000000,
  CallFinishReason1763840000000,
  BudgetsAndRetries1763855210000,
  Presets1764000000000,
  EventPartitions1764100000000,
  StageWriteCompact1764200000000,
  StageWriteGroup1764300000000,
  WorkByKey1764450000000,
  AdminSessions1764533000000,
  MessageStatuses1764600000000,
  StopNotices1764710000000,
  StageWriteLoaded1764800000000,
  StageWriteAsSent1764900000000,
];

/**
 * How long opening a connection, or waiting for a free one of the pool, may take (pg's
 * connectionTimeoutMillis; 0: without end). A server that does not answer (a network partition
 * rather than a refused connection) then fails as unavailable instead of hanging. No statement or
 * query timeout is set: reports, exports, migrations and retention run long statements on these
 * same pools; the stage's writes are bounded by STORE_HOLD_MS instead (writeThroughOutage).
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export function dataSourceOptions(
  databaseUrl: string,
  poolSize = 10,
  connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    // Every table as an EntitySchema (entities/): the repositories' plain reads and writes go
    // through them; entities.db-spec.ts checks them against what the migrations build.
    entities: ENTITIES,
    // The schema is the migrations' (gen_random_uuid() is PostgreSQL's own since 13): TypeORM
    // creates no extension when it connects.
    installExtensions: false,
    uuidExtension: 'pgcrypto',
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    migrationsRun: false,
    logging: ['error'],
    extra: { max: poolSize, connectionTimeoutMillis: connectTimeoutMs },
  };
}

export function createDataSource(
  databaseUrl: string,
  poolSize?: number,
  connectTimeoutMs?: number,
): DataSource {
  return new DataSource(dataSourceOptions(databaseUrl, poolSize, connectTimeoutMs));
}

/** The key of the advisory lock `migrate` holds (any fixed bigint; advisory locks are per database). */
export const MIGRATION_LOCK_KEY = '7423019583311000023';

/**
 * Creates the database when it does not exist, then applies pending migrations. Runs of it on one
 * database take turns: each holds a session-level advisory lock on a connection of its own while it
 * migrates, so a second run waits and then finds nothing left to do. That lock needs PostgreSQL
 * itself (or a session pooler): through a transaction pooler it would stay behind on whichever
 * server connection took it (see migrationDatabaseUrl in @conclave/config).
 */
export async function migrate(databaseUrl: string): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  const dataSource = createDataSource(databaseUrl, 2);
  await dataSource.initialize();
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      // The event partitions of this week and the next ones, also when nothing was pending
      // (the workers' data-lifecycle job keeps them ahead afterwards).
      await dataSource.transaction((manager) => ensureEventPartitions(manager, partitionsAhead(new Date())));
      return applied.map((m) => m.name);
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await lock.release();
    await dataSource.destroy();
  }
}

export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`unsupported database name "${name}"`);
  url.pathname = '/postgres';
  const admin = new DataSource({
    type: 'postgres',
    url: url.toString(),
    extra: { max: 1, connectionTimeoutMillis: DEFAULT_CONNECT_TIMEOUT_MS },
  });
  await admin.initialize();
  try {
    const rows: unknown[] = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rows.length === 0) {
      await admin.query(`CREATE DATABASE "${name}"`).catch((error: { code?: string }) => {
        // Created meanwhile by another process: 42P04, or 23505 when both inserted at once.
        if (error.code !== '42P04' && error.code !== '23505') throw error;
      });
    }
  } finally {
    await admin.destroy();
  }
}

import { randomBytes } from 'node:crypto';
import { createDataSource, migrate } from '@conclave/persistence';
import type { DataSource } from 'typeorm';

/** The shared PostgreSQL server of the tests (trust auth): every test makes its own database on it. */
export const SHARED_POSTGRES = 'postgres://postgres@127.0.0.1:5432';

/** A new, unused database URL on a server (the shared one unless given): `<server>/<prefix>_<random>`. */
export function scratchDatabaseUrl(prefix = 'conclave_t', server = SHARED_POSTGRES): string {
  return `${server.replace(/\/+$/, '')}/${prefix}_${randomBytes(5).toString('hex')}`;
}

/** The database a URL names, checked to be a plain identifier (it goes into DDL). */
export function databaseName(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`unsupported database name "${name}"`);
  return name;
}

/** Drops databases (of the server of the first URL), whoever is still connected to them. */
export async function dropDatabases(...databaseUrls: string[]): Promise<void> {
  if (databaseUrls.length === 0) return;
  const url = new URL(databaseUrls[0]);
  url.pathname = '/postgres';
  const admin = createDataSource(url.toString(), 1);
  await admin.initialize();
  try {
    for (const databaseUrl of databaseUrls) {
      await admin.query(`DROP DATABASE IF EXISTS "${databaseName(databaseUrl)}" WITH (FORCE)`);
    }
  } finally {
    await admin.destroy();
  }
}

export interface ScratchDatabase {
  readonly url: string;
  /** An initialised DataSource on it. */
  readonly db: DataSource;
  /** Closes `db` and drops the database. */
  drop(): Promise<void>;
}

/**
 * A throwaway database for one test file, migrated to the newest schema, on the shared server (or
 * `server`): runs side by side with anything. Call `drop()` in afterAll.
 */
export async function scratchDatabase(
  options: { prefix?: string; poolSize?: number; server?: string } = {},
): Promise<ScratchDatabase> {
  const url = scratchDatabaseUrl(options.prefix, options.server);
  const db = createDataSource(url, options.poolSize ?? 4);
  try {
    await migrate(url);
    await db.initialize();
  } catch (error) {
    await dropDatabases(url).catch(() => undefined);
    throw error;
  }
  return {
    url,
    db,
    async drop() {
      await db.destroy().catch(() => undefined);
      await dropDatabases(url);
    },
  };
}

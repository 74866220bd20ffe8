import { ConfigError } from './errors';

/**
 * What DATABASE_URL reaches, as PgBouncer's `pool_mode` names it.
 *
 * - `session` (the default): PostgreSQL itself, or a pooler that hands each client connection one
 *   server connection for as long as it is open (PgBouncer `pool_mode = session`). The statements
 *   every stage runs are named prepared statements, parsed and planned once per connection.
 * - `transaction`: a transaction-pooling pooler (PgBouncer `pool_mode = transaction`), where two
 *   statements of one client connection may run on two different server connections. Nothing may
 *   rely on session state there: no named prepared statements (PgBouncer before 1.21 does not
 *   track them), no session-level SET, advisory locks, LISTEN or temporary tables.
 *
 * `statement` pooling is refused: Conclave runs transactions of several statements.
 */
export type DatabasePoolMode = 'session' | 'transaction';

export interface DatabaseSettings {
  /** DATABASE_POOL_MODE. */
  poolMode: DatabasePoolMode;
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, for migrations (they take a session-level advisory
   * lock, which a transaction pooler cannot keep). Null: migrations use DATABASE_URL, which
   * `migrate` refuses when DATABASE_POOL_MODE is `transaction`. Holds credentials: never log it.
   */
  directUrl: string | null;
  /**
   * DATABASE_LISTEN_URL: where a worker LISTENs for stops (a connection of its own that stays open;
   * a transaction pooler cannot carry LISTEN). Null: see listenDatabaseUrl. Holds credentials:
   * never log it.
   */
  listenUrl: string | null;
}

export function parseDatabasePoolMode(raw: string | undefined): DatabasePoolMode {
  const value = raw?.trim().toLowerCase() ?? '';
  if (value === '' || value === 'session') return 'session';
  if (value === 'transaction') return 'transaction';
  if (value === 'statement') {
    throw new ConfigError(
      'DATABASE_POOL_MODE=statement is not supported: Conclave runs transactions of several statements ' +
        '(use PgBouncer pool_mode = transaction with DATABASE_POOL_MODE=transaction, or session)',
    );
  }
  throw new ConfigError(
    `DATABASE_POOL_MODE must be session (PostgreSQL itself or a session-pooling PgBouncer, the default) ` +
      `or transaction (a transaction-pooling PgBouncer), got "${raw}"`,
  );
}

/** A postgres:// URL or nothing; the message never repeats the value (it may hold a password). */
export function parseDirectUrl(raw: string | undefined, name = 'DATABASE_DIRECT_URL'): string | null {
  const value = raw?.trim() ?? '';
  if (value === '') return null;
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (!url || !/^postgres(ql)?:$/.test(url.protocol) || !url.hostname) {
    throw new ConfigError(
      `${name} must be a URL like postgres://user@host:5432/conclave (PostgreSQL itself, not a pooler)`,
    );
  }
  return value;
}

export function parseDatabaseSettings(env: NodeJS.ProcessEnv): DatabaseSettings {
  return {
    poolMode: parseDatabasePoolMode(env.DATABASE_POOL_MODE),
    directUrl: parseDirectUrl(env.DATABASE_DIRECT_URL),
    listenUrl: parseDirectUrl(env.DATABASE_LISTEN_URL, 'DATABASE_LISTEN_URL'),
  };
}

/**
 * The URL migrations connect to: DATABASE_DIRECT_URL, else DATABASE_URL unless that is a
 * transaction pooler (DATABASE_POOL_MODE=transaction), which is refused with what to set instead.
 */
export function migrationDatabaseUrl(config: { databaseUrl: string; database: DatabaseSettings }): string {
  if (config.database.directUrl) return config.database.directUrl;
  if (config.database.poolMode === 'transaction') {
    throw new ConfigError(
      'migrations need a direct connection to PostgreSQL (they hold a session-level advisory lock), but ' +
        'DATABASE_POOL_MODE=transaction says DATABASE_URL is a transaction pooler: set DATABASE_DIRECT_URL ' +
        'to PostgreSQL itself (e.g. postgres://user@db-host:5432/conclave) for the migration',
    );
  }
  return config.databaseUrl;
}

/**
 * The URL a worker LISTENs on for stops (channel `conclave_stops`): DATABASE_LISTEN_URL, else
 * DATABASE_DIRECT_URL, else DATABASE_URL unless that is a transaction pooler
 * (DATABASE_POOL_MODE=transaction), where LISTEN does not work: null, and the worker hears stops
 * on the Redis control channel only (with the gap OPERATIONS.md "Stopping" describes).
 */
export function listenDatabaseUrl(config: {
  databaseUrl: string;
  database: DatabaseSettings;
}): string | null {
  if (config.database.listenUrl) return config.database.listenUrl;
  if (config.database.directUrl) return config.database.directUrl;
  return config.database.poolMode === 'transaction' ? null : config.databaseUrl;
}

import { ConfigError, loadConfig } from './config';
import { listenDatabaseUrl, migrationDatabaseUrl } from './database-settings';

describe('DATABASE_POOL_MODE and DATABASE_DIRECT_URL', () => {
  it('default to session pooling (PostgreSQL itself) and no direct URL', () => {
    expect(loadConfig({}).database).toEqual({ poolMode: 'session', directUrl: null, listenUrl: null });
    expect(loadConfig({ DATABASE_POOL_MODE: '', DATABASE_DIRECT_URL: '' }).database).toEqual({
      poolMode: 'session',
      directUrl: null,
      listenUrl: null,
    });
  });

  it('read transaction pooling and the direct URL', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://app@pgbouncer:6432/conclave',
      DATABASE_POOL_MODE: 'transaction',
      DATABASE_DIRECT_URL: 'postgresql://app:secret@db:5432/conclave',
    });
    expect(config.database).toEqual({
      poolMode: 'transaction',
      directUrl: 'postgresql://app:secret@db:5432/conclave',
      listenUrl: null,
    });
    expect(loadConfig({ DATABASE_POOL_MODE: 'Transaction' }).database.poolMode).toBe('transaction');
  });

  it('refuse statement pooling and unknown modes, naming the variable', () => {
    expect(() => loadConfig({ DATABASE_POOL_MODE: 'statement' })).toThrow(
      /DATABASE_POOL_MODE=statement is not supported: Conclave runs transactions of several statements/,
    );
    expect(() => loadConfig({ DATABASE_POOL_MODE: 'pgbouncer' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_POOL_MODE: 'pgbouncer' })).toThrow(
      /^DATABASE_POOL_MODE must be session .* or transaction .*, got "pgbouncer"$/,
    );
  });

  it.each(['not a url', 'mysql://db:3306/conclave', 'postgres://:5432'])(
    'refuse a DATABASE_DIRECT_URL that is not a PostgreSQL URL (%s) without repeating it',
    (value) => {
      let error: unknown;
      try {
        loadConfig({ DATABASE_DIRECT_URL: value });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^DATABASE_DIRECT_URL must be a URL like postgres:\/\//);
      expect((error as Error).message).not.toContain(value);
    },
  );

  it('send migrations to the direct URL, else DATABASE_URL unless it is a transaction pooler', () => {
    const direct = 'postgres://postgres@db:5432/conclave';
    const bouncer = 'postgres://postgres@pgbouncer:6432/conclave';
    expect(migrationDatabaseUrl(loadConfig({ DATABASE_URL: direct }))).toBe(direct);
    expect(
      migrationDatabaseUrl(
        loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: direct }),
      ),
    ).toBe(direct);
    expect(() =>
      migrationDatabaseUrl(loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'transaction' })),
    ).toThrow(/migrations need a direct connection to PostgreSQL .* set DATABASE_DIRECT_URL/);
    // A session-pooling PgBouncer keeps a session's lock: migrations may go through it.
    expect(migrationDatabaseUrl(loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'session' }))).toBe(
      bouncer,
    );
  });

  it('LISTEN for stops on DATABASE_LISTEN_URL, else the direct URL, else DATABASE_URL unless it is a transaction pooler', () => {
    const bouncer = 'postgres://app@pgbouncer:6432/conclave';
    const direct = 'postgres://app@db:5432/conclave';
    const listen = 'postgres://listener@db:5432/conclave';
    expect(listenDatabaseUrl(loadConfig({ DATABASE_URL: direct }))).toBe(direct);
    expect(
      listenDatabaseUrl(
        loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'transaction', DATABASE_LISTEN_URL: listen }),
      ),
    ).toBe(listen);
    expect(
      listenDatabaseUrl(
        loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: direct }),
      ),
    ).toBe(direct);
    // LISTEN does not work through a transaction pooler: none (stops come over Redis only).
    expect(
      listenDatabaseUrl(loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'transaction' })),
    ).toBeNull();
    expect(listenDatabaseUrl(loadConfig({ DATABASE_URL: bouncer, DATABASE_POOL_MODE: 'session' }))).toBe(
      bouncer,
    );
    expect(() => loadConfig({ DATABASE_LISTEN_URL: 'pgbouncer:6432' })).toThrow(
      /^DATABASE_LISTEN_URL must be a URL/,
    );
  });
});

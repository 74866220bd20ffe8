import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BatchAccepted, BatchView, DeliberationView, DeliveredEvent } from '@conclave/contracts';
import { loadConfig } from '@conclave/config';
import { createDataSource, migrate, TypeOrmDeliberationStore } from '@conclave/persistence';
import type { DataSource } from 'typeorm';
import { COUNCIL_SEQUENCE, TestStack, expectContiguous, modeEvents } from './support/harness';
import { dropDatabases, scratchDatabaseUrl } from './support/database';
import { PgBouncer } from './support/pgbouncer';

/**
 * Conclave behind Debian's PgBouncer (1.18 here: it does not track named prepared statements) in
 * transaction-pooling mode, with two server connections for all of a gateway's and a worker's
 * client connections. The gateway and the worker run with DATABASE_POOL_MODE=transaction; the
 * migrations go to PostgreSQL itself (DATABASE_DIRECT_URL). The same PgBouncer also shows what
 * happens without the setting.
 */

const ROOT = path.resolve(__dirname, '..');
const run = promisify(execFile);

const REQUESTS: Record<string, Record<string, unknown>> = {
  council: { question: 'Bridges?', councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'] },
  vote: { question: 'Tabs or spaces?', mode: 'vote', modeConfig: { models: ['sim/v1', 'sim/v2', 'sim/v3'] } },
  jury: {
    question: 'Is the answer right?',
    mode: 'jury',
    modeConfig: {
      content: 'Water boils at 100 degrees Celsius at sea level.',
      jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
      foremanModel: 'sim/foreman',
    },
  },
  debate: {
    question: 'Monolith or services?',
    mode: 'debate',
    modeConfig: { models: ['sim/d1', 'sim/d2', 'sim/d3'] },
  },
  delphi: {
    question: 'How many bridges does a city of a million need?',
    mode: 'delphi',
    modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f' },
  },
};

/** `npm run migrate`, as an operator runs it, with the given settings. */
function migrateCli(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'apps/ops/src/migrate.ts'],
    { cwd: ROOT, env: { ...process.env, ...env } },
  ).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? 1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
}

describe('through PgBouncer in transaction-pooling mode', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '16' });
  const database = decodeURIComponent(new URL(stack.config.databaseUrl).pathname.slice(1));
  /** The same database behind one server connection: any two client connections share it. */
  const single = `${database}_single`;
  let bouncer: PgBouncer;
  let throughBouncer: Record<string, string>;
  let migrated: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    bouncer = await PgBouncer.start({
      upstream: { host: '127.0.0.1', port: Number(new URL(stack.config.databaseUrl).port || 5432) },
      poolMode: 'transaction',
      defaultPoolSize: 2,
      databases: { [single]: `dbname=${database} pool_size=1` },
    });
    throughBouncer = { DATABASE_URL: bouncer.url(database), DATABASE_POOL_MODE: 'transaction' };
    // As an operator deploys it: DATABASE_URL is the bouncer everywhere, the migration goes direct.
    migrated = await migrateCli({ ...throughBouncer, DATABASE_DIRECT_URL: stack.config.databaseUrl });
    stack.db = createDataSource(stack.config.databaseUrl, 4);
    await stack.db.initialize();
    const gateway = await stack.spawnGateway(throughBouncer);
    stack.baseUrl = gateway.baseUrl;
    await stack.spawnWorker(throughBouncer);
  }, 120_000);

  afterAll(async () => {
    await stack.stop();
    await bouncer?.stop();
  });

  const poolOf = async () => {
    const pools = await bouncer.admin<{ database: string; pool_mode: string }>('SHOW POOLS');
    const servers = await bouncer.admin<{ database: string }>('SHOW SERVERS');
    const clients = await bouncer.admin<{ database: string }>('SHOW CLIENTS');
    return {
      mode: pools.find((p) => p.database === database)?.pool_mode,
      servers: servers.filter((s) => s.database === database).length,
      clients: clients.filter((c) => c.database === database).length,
    };
  };

  it('migrates through DATABASE_DIRECT_URL, and refuses the transaction pooler without it', async () => {
    expect(migrated).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/applied migrations: InitialSchema/),
    });
    const refused = await migrateCli(throughBouncer);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /migration failed: migrations need a direct connection to PostgreSQL .*set DATABASE_DIRECT_URL/,
    );
  });

  it('runs every mode to completion, many client connections sharing two server connections', async () => {
    const runs = await Promise.all(
      Object.entries(REQUESTS).map(async ([mode, body]) => ({ mode, ...(await stack.run(body)) })),
    );
    for (const { mode, messageId, events } of runs) {
      expectContiguous(events);
      expect({ mode, last: events.at(-1)?.type }).toEqual({ mode, last: 'complete' });
      const view = await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`);
      expect(view.body).toMatchObject({ messageId, mode, status: 'complete' });
    }
    const pool = await poolOf();
    expect(pool.mode).toBe('transaction');
    // Two server connections at most, and more client connections than that: they were shared.
    expect(pool.servers).toBeGreaterThan(0);
    expect(pool.servers).toBeLessThanOrEqual(2);
    expect(pool.clients).toBeGreaterThan(2);
  });

  it('runs a follow-up council turn of the same conversation', async () => {
    const first = await stack.run(REQUESTS.council);
    const second = await stack.run({
      ...REQUESTS.council,
      question: 'And in a city of ten million?',
      conversationId: first.conversationId,
    });
    expect(second.conversationId).toBe(first.conversationId);
    // A follow-up has no title of its own.
    expect(modeEvents(second.events).map((e) => e.type)).toEqual(
      COUNCIL_SEQUENCE.filter((t) => t !== 'title_complete'),
    );
    const turns: { turn: number; status: string }[] = await stack.db.query(
      `SELECT turn, status FROM messages WHERE conversation_id = $1 AND role = 'assistant' ORDER BY turn`,
      [first.conversationId],
    );
    expect(turns).toEqual([
      { turn: 1, status: 'complete' },
      { turn: 2, status: 'complete' },
    ]);
  });

  it('runs a batch to the end', async () => {
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        name: 'through pgbouncer',
        defaults: {
          mode: 'jury',
          modeConfig: { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/f' },
        },
        items: Array.from({ length: 6 }, (_, i) => ({
          question: `Item ${i}`,
          modeConfig: { content: `Candidate answer ${i}: the sky is blue because of Rayleigh scattering.` },
        })),
        concurrency: 3,
      },
    });
    expect(accepted.status).toBe(202);
    const socket = await stack.connect();
    const done = await new Promise<BatchView>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('batch did not complete')), 50_000);
      socket.on('batch_complete', (view: BatchView) => {
        if (view.batchId !== accepted.body.batchId) return;
        clearTimeout(timer);
        resolve(view);
      });
      void socket.emitWithAck('subscribe', { batchId: accepted.body.batchId });
    });
    expect(done).toMatchObject({ status: 'complete', total: 6, complete: 6, failed: 0 });
  });

  it('replays the stored events to a client that reconnects with afterSeq', async () => {
    const { messageId } = await stack.deliberate(REQUESTS.council);
    const first = await stack.connect();
    const seen: DeliveredEvent[] = [];
    await new Promise<void>((resolve) => {
      first.onAny((_name: string, event: DeliveredEvent) => {
        if (event?.messageId !== messageId) return;
        seen.push(event);
        if (seen.length === 3) resolve();
      });
      void first.emitWithAck('subscribe', { messageId });
    });
    first.disconnect();
    const lastSeen = seen[2].seq;
    const rest = await stack.follow(messageId, { afterSeq: lastSeen });
    expectContiguous([...seen.slice(0, 3), ...rest]);
    expect(rest.at(-1)?.type).toBe('complete');
    // And all of it again from the start, from storage.
    const again = await stack.follow(messageId);
    expect(again).toEqual([...seen.slice(0, 3), ...rest]);
  });

  it('cancels a running deliberation', async () => {
    const { messageId } = await stack.deliberate({
      question: 'Slow',
      councilModels: ['sim/a:delay8000@answer', 'sim/b:delay8000@answer'],
    });
    const socket = await stack.connect();
    const following = stack.follow(messageId, { socket });
    await new Promise<void>((resolve) => {
      socket.onAny((name: string, event: DeliveredEvent) => {
        if (event?.messageId === messageId && name === 'stage1_start') resolve();
      });
    });
    const cancelled = await stack.api<DeliberationView>('POST', `/api/deliberations/${messageId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ messageId, status: 'cancelled' });
    const events = await following;
    expect(events.at(-1)).toMatchObject({ type: 'cancelled' });
    expectContiguous(events);
  });

  describe('what the setting prevents', () => {
    let sharedServer: DataSource;
    beforeAll(async () => {
      // Two client connections (a pool of 2) through the alias with a single server connection.
      sharedServer = createDataSource(bouncer.url(single), 2);
      await sharedServer.initialize();
    });
    afterAll(() => sharedServer?.destroy());

    /** Two loads at once: the pool opens two client connections, PgBouncer runs both on one server. */
    const loadTwice = async (store: TypeOrmDeliberationStore, messageId: string) => {
      const settled = await Promise.allSettled([store.load(messageId, 0), store.load(messageId, 0)]);
      return settled.map((s) => (s.status === 'fulfilled' ? 'loaded' : String((s.reason as Error).message)));
    };

    it('named prepared statements (the default, DATABASE_POOL_MODE=session) break', async () => {
      const { messageId } = await stack.run(REQUESTS.council);
      // What the apps build without the setting (PersistenceModule): named statements.
      expect(loadConfig({}).database.poolMode).toBe('session');
      const store = new TypeOrmDeliberationStore(sharedServer);
      const outcomes = await loadTwice(store, messageId);
      // The second client connection prepares the same name on the server connection the first
      // one already prepared it on.
      expect(outcomes).toContainEqual(
        expect.stringMatching(/prepared statement "conclave_load_message" already exists/),
      );
    });

    it('with DATABASE_POOL_MODE=transaction the same loads succeed', async () => {
      const { messageId } = await stack.run(REQUESTS.council);
      // What PersistenceModule builds with DATABASE_POOL_MODE=transaction.
      const store = new TypeOrmDeliberationStore(sharedServer, { preparedStatements: false });
      for (let round = 0; round < 3; round++)
        expect(await loadTwice(store, messageId)).toEqual(['loaded', 'loaded']);
    });

    it('a session-level advisory lock taken through it excludes nobody (why migrations go direct)', async () => {
      const key = 4_242_001;
      const [a, b] = [sharedServer.createQueryRunner(), sharedServer.createQueryRunner()];
      try {
        await a.connect();
        await b.connect();
        const [held]: { ok: boolean }[] = await a.query('SELECT pg_try_advisory_lock($1) AS ok', [key]);
        const [also]: { ok: boolean }[] = await b.query('SELECT pg_try_advisory_lock($1) AS ok', [key]);
        // Both "hold" it: they ran on the one server connection, one session as far as PostgreSQL knows.
        expect([held.ok, also.ok]).toEqual([true, true]);
      } finally {
        await a.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
        await a.release();
        await b.release();
      }
      // Directly, two connections are two sessions: the second is refused while the first holds it.
      const [c, d] = [stack.db.createQueryRunner(), stack.db.createQueryRunner()];
      try {
        await c.connect();
        await d.connect();
        const [held]: { ok: boolean }[] = await c.query('SELECT pg_try_advisory_lock($1) AS ok', [key]);
        const [also]: { ok: boolean }[] = await d.query('SELECT pg_try_advisory_lock($1) AS ok', [key]);
        expect([held.ok, also.ok]).toEqual([true, false]);
      } finally {
        await c.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
        await c.release();
        await d.release();
      }
    });
  });
});

describe('migrate', () => {
  it('two runs at once on a fresh database take turns (advisory lock): both succeed, each migration applied once', async () => {
    const url = scratchDatabaseUrl('conclave_mig');
    try {
      const [one, two] = await Promise.all([migrate(url), migrate(url)]);
      const applied = [...one, ...two].sort();
      const db = createDataSource(url, 1);
      await db.initialize();
      const rows: { name: string }[] = await db.query('SELECT name FROM typeorm_migrations ORDER BY id');
      await db.destroy();
      expect(applied).toEqual(rows.map((r) => r.name).sort());
      expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
    } finally {
      await dropDatabases(url);
    }
  });
});

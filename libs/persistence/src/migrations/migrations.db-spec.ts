import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type MessageStatus, TERMINAL_STATUSES } from '@conclave/contracts';
import type { DataSource } from 'typeorm';
import { createDataSource, migrate } from '../data-source';
import { LIVE_FUNCTIONS } from '../sql';
import { STAGE_WRITE_1763820000000 } from './1763820000000-stage-write';
import { STAGE_WRITE_1763830000000 } from './1763830000000-stage-write-only';
import { STAGE_WRITE_1763840000000 } from './1763840000000-call-finish-reason';
import { STAGE_WRITE_1764100000000 } from './1764100000000-event-partitions';
import { STAGE_WRITE_GROUP_1764300000000 } from './1764300000000-stage-write-group';
import { MESSAGE_STATUSES_1764600000000, STAGE_WRITE_1764600000000 } from './1764600000000-message-statuses';
import { STOP_NOTICE_1764710000000 } from './1764710000000-stop-notices';
import { STAGE_WRITE_1764800000000 } from './1764800000000-stage-write-loaded';
import { STAGE_WRITE_1764900000000 } from './1764900000000-stage-write-as-sent';

/** A database of this file's own on the shared server, dropped at the end: runs side by side with anything. */
const DATABASE_URL = `postgres://postgres@127.0.0.1:5432/conclave_mg_${randomBytes(5).toString('hex')}`;

let db: DataSource;

beforeAll(async () => {
  await migrate(DATABASE_URL);
  db = createDataSource(DATABASE_URL, 2);
  await db.initialize();
});

afterAll(async () => {
  await db?.destroy();
  const admin = createDataSource('postgres://postgres@127.0.0.1:5432/postgres', 1);
  await admin.initialize();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${new URL(DATABASE_URL).pathname.slice(1)}" WITH (FORCE)`);
  } finally {
    await admin.destroy();
  }
});

/** Every function of the public schema and its definition as PostgreSQL keeps it. */
async function definitions(q: { query: DataSource['query'] }): Promise<Record<string, string>> {
  const rows: { name: string; def: string }[] = await q.query(
    `SELECT p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS def
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.def]));
}

describe('frozen migrations', () => {
  it('build exactly the live functions (libs/persistence/src/sql): a live text changed without a new migration fails here', async () => {
    const migrated = await definitions(db);
    const runner = db.createQueryRunner();
    await runner.connect();
    try {
      // In a transaction rolled back at the end: only the live texts' functions, then read them back.
      await runner.startTransaction();
      // CASCADE: a trigger's function takes its trigger with it (rolled back with the rest).
      for (const name of Object.keys(migrated)) await runner.query(`DROP FUNCTION ${name} CASCADE`);
      for (const text of LIVE_FUNCTIONS) await runner.query(text);
      const live = await definitions(runner);
      await runner.rollbackTransaction();
      expect(Object.keys(live)).toEqual([
        'conclave_notify_stop()',
        'conclave_open_statuses()',
        'conclave_stage_write(uuid,jsonb)',
        'conclave_stage_write_group(jsonb)',
        'conclave_terminal_statuses()',
      ]);
      expect(migrated).toEqual(live);
    } finally {
      await runner.release();
    }
  });

  it('import nothing live: each migration carries the SQL it ran', () => {
    const dir = __dirname;
    const migrations = readdirSync(dir).filter((f) => /^\d{13}-.*\.ts$/.test(f) && !f.endsWith('.spec.ts'));
    expect(migrations.length).toBeGreaterThanOrEqual(14);
    for (const file of migrations) {
      const imports = [...readFileSync(join(dir, file), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]);
      // typeorm's types, the partition helpers (they create tables, not functions) and other migrations only.
      for (const from of imports)
        expect([file, from]).toEqual([
          file,
          expect.stringMatching(/^(typeorm|\.\.\/lifecycle\/.*|\.\/\d{13}-.*)$/),
        ]);
    }
  });

  it('keep the texts they ran (a frozen text never changes: a new one goes into a new migration)', () => {
    const sha = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
    expect({
      1763820000000: sha(STAGE_WRITE_1763820000000),
      1763830000000: sha(STAGE_WRITE_1763830000000),
      1763840000000: sha(STAGE_WRITE_1763840000000),
      1764100000000: sha(STAGE_WRITE_1764100000000),
      1764300000000: sha(STAGE_WRITE_GROUP_1764300000000),
      1764600000000: sha(MESSAGE_STATUSES_1764600000000 + STAGE_WRITE_1764600000000),
      1764710000000: sha(STOP_NOTICE_1764710000000),
      1764800000000: sha(STAGE_WRITE_1764800000000),
      1764900000000: sha(STAGE_WRITE_1764900000000),
    }).toEqual({
      1763820000000: '7d15c98d4e4a5927',
      1763830000000: '5cf424c32344ae8d',
      1763840000000: '6d1c405a7364ad51',
      1764100000000: 'c4bc74ed6d22cf6e',
      1764300000000: '16690067cbad7885',
      1764600000000: 'aeffe02c17de3955',
      1764710000000: 'ed490c96587fc494',
      1764800000000: '9e4a5853caf1021f',
      1764900000000: '8ad06c118b42a694',
    });
  });
});

/** Every status a deliberation can have: a status added to MessageStatus fails to compile here. */
const STATUSES: Record<MessageStatus, true> = {
  queued: true,
  running: true,
  complete: true,
  failed: true,
  cancelled: true,
};

describe('message statuses in SQL', () => {
  it('agree with TERMINAL_STATUSES: conclave_terminal_statuses() is that list, conclave_open_statuses() the rest', async () => {
    const [row]: { terminal: string[]; open: string[]; allowed: string }[] = await db.query(
      `SELECT conclave_terminal_statuses() AS terminal, conclave_open_statuses() AS open,
         (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'messages_status_check') AS allowed`,
    );
    expect(row.terminal).toEqual([...TERMINAL_STATUSES]);
    const all = Object.keys(STATUSES);
    expect(row.open).toEqual(all.filter((s) => !TERMINAL_STATUSES.includes(s as MessageStatus)));
    // The messages table accepts exactly these statuses.
    expect([...row.allowed.matchAll(/'(\w+)'/g)].map((m) => m[1]).sort()).toEqual([...all].sort());
  });

  it('fold into the constant list when planned (the same plan as a literal list; the partial index still matches)', async () => {
    const runner = db.createQueryRunner();
    await runner.connect();
    try {
      await runner.query('SET enable_seqscan = off');
      const explain = async (sql: string) =>
        ((await runner.query(`EXPLAIN (COSTS OFF, VERBOSE) ${sql}`)) as { 'QUERY PLAN': string }[])
          .map((r) => r['QUERY PLAN'])
          .join('\n');
      const open = await explain(
        `SELECT id FROM messages WHERE api_key_id = ANY('{}'::uuid[]) AND api_key_id IS NOT NULL
           AND status = ANY(conclave_open_statuses())`,
      );
      expect(open).toContain('idx_messages_open_by_key');
      expect(open).not.toContain('conclave_');
      const ended = await explain(`SELECT id FROM messages WHERE status = ANY(conclave_terminal_statuses())`);
      expect(ended).toContain(`'{complete,failed,cancelled}'::text[]`);
      expect(ended).not.toContain('conclave_');
    } finally {
      await runner.release();
    }
  });

  it('are the only status lists in the SQL of libs/persistence (migrations aside: they are frozen)', () => {
    const root = join(__dirname, '..');
    const files = (readdirSync(root, { recursive: true }) as string[]).filter(
      (f) =>
        f.endsWith('.ts') && !f.endsWith('.spec.ts') && !f.startsWith('migrations') && !f.startsWith('sql'),
    );
    expect(files.length).toBeGreaterThan(10);
    const lists: string[] = [];
    for (const file of files) {
      for (const [n, line] of readFileSync(join(root, file), 'utf8').split('\n').entries()) {
        // The lists a deliberation's status is tested against: ended, or not yet.
        if (
          /'complete',\s*'failed',\s*'cancelled'|status IN \('queued',\s*'running'\)/.test(line) &&
          !/FROM batches/.test(line)
        ) {
          lists.push(`${file}:${n + 1}`);
        }
      }
    }
    expect(lists).toEqual([]);
  });
});

import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ApiKeysRepository } from './repositories/api-keys.repository';
import { createDataSource, migrate } from './data-source';
import { STOP_LISTENER_APPLICATION, StopListener } from './stop-listener';

/** A database of this file's own on the shared server (NOTIFY channels are per database). */
const DATABASE_URL = `postgres://postgres@127.0.0.1:5432/conclave_sl_${randomBytes(5).toString('hex')}`;

let db: DataSource;

beforeAll(async () => {
  await migrate(DATABASE_URL);
  db = createDataSource(DATABASE_URL, 2);
  await db.initialize();
  await new ApiKeysRepository(db).createUserWithKey('listener', 'user');
}, 60_000);

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

async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function newMessage(status: string): Promise<string> {
  const [{ id: userId }]: { id: string }[] = await db.query('SELECT id FROM users LIMIT 1');
  const [{ id: conversationId }]: { id: string }[] = await db.query(
    `INSERT INTO conversations (user_id, mode) VALUES ($1, 'council') RETURNING id`,
    [userId],
  );
  const [{ id }]: { id: string }[] = await db.query(
    `INSERT INTO messages (conversation_id, role, content, status, turn, mode)
     VALUES ($1, 'assistant', '', $2, 1, 'council') RETURNING id`,
    [conversationId, status],
  );
  return id;
}

describe('StopListener and the stop notices (migration 1764710000000)', () => {
  it('hears each deliberation stored as cancelled, in the transaction that stores it, and nothing else', async () => {
    const heard: string[] = [];
    let ups = 0;
    const listener = new StopListener(DATABASE_URL, {
      stop: (id) => heard.push(id),
      up: () => (ups += 1),
      down: () => undefined,
    });
    await listener.start();
    try {
      expect(ups).toBe(1);
      const [running, queued, done] = [
        await newMessage('running'),
        await newMessage('queued'),
        await newMessage('running'),
      ];
      // Completed: no notice. Rolled back: no notice.
      await db.query(`UPDATE messages SET status = 'complete' WHERE id = $1`, [done]);
      await db
        .transaction(async (manager) => {
          await manager.query(`UPDATE messages SET status = 'cancelled' WHERE id = $1`, [running]);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      // Both stops of one statement (as a batch's queued items are cancelled).
      await db.query(`UPDATE messages SET status = 'cancelled' WHERE id = ANY($1)`, [[running, queued]]);
      await until('both notices', () => heard.length >= 2);
      // Once per stop: an update of a message already cancelled announces nothing.
      await db.query(`UPDATE messages SET status = 'cancelled', error = 'again' WHERE id = $1`, [running]);
      await db.query('SELECT pg_sleep(0.2)');
      expect([...heard].sort()).toEqual([running, queued].sort());
    } finally {
      await listener.close();
    }
  });

  it('says when its connection is lost and listens again by itself', async () => {
    const heard: string[] = [];
    const signals: string[] = [];
    const listener = new StopListener(DATABASE_URL, {
      stop: (id) => heard.push(id),
      up: () => signals.push('up'),
      down: () => signals.push('down'),
    });
    await listener.start();
    try {
      await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $1`,
        [STOP_LISTENER_APPLICATION],
      );
      await until('down and up again', () => signals.join(',') === 'up,down,up');
      const id = await newMessage('running');
      await db.query(`UPDATE messages SET status = 'cancelled' WHERE id = $1`, [id]);
      await until('the notice after the reconnect', () => heard.includes(id));
    } finally {
      await listener.close();
    }
    expect(signals).toEqual(['up', 'down', 'up']);
  });
});

import type { DataSource } from 'typeorm';
import { round } from './stats';

/**
 * What one round trip and one small transaction cost on this machine, measured the way the
 * product talks to PostgreSQL (TypeORM, one statement at a time): a yardstick for the overheads.
 */
export async function calibrate(db: DataSource): Promise<{ statementMs: number; transactionMs: number }> {
  await db.query('CREATE TABLE IF NOT EXISTS bench_calibration (id int PRIMARY KEY, v int NOT NULL)');
  await db.query('INSERT INTO bench_calibration VALUES (1, 0) ON CONFLICT DO NOTHING');
  try {
    const statements = 200;
    let t = performance.now();
    for (let i = 0; i < statements; i++) await db.query('SELECT v FROM bench_calibration WHERE id = $1', [1]);
    const statementMs = (performance.now() - t) / statements;
    const transactions = 50;
    t = performance.now();
    for (let i = 0; i < transactions; i++) {
      // the shape of the product's event append: lock the row, look, write, bump, commit
      await db.transaction(async (m) => {
        await m.query('SELECT v FROM bench_calibration WHERE id = $1 FOR UPDATE', [1]);
        await m.query('SELECT v FROM bench_calibration WHERE id = $1 AND v >= $2', [1, 0]);
        await m.query('UPDATE bench_calibration SET v = $2 WHERE id = $1', [1, i]);
        await m.query('UPDATE bench_calibration SET v = v + 1 WHERE id = $1', [1]);
      });
    }
    const transactionMs = (performance.now() - t) / transactions;
    return { statementMs: round(statementMs, 2), transactionMs: round(transactionMs, 2) };
  } finally {
    await db.query('DROP TABLE IF EXISTS bench_calibration');
  }
}

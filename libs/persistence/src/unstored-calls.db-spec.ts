import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { scratchDatabase, type ScratchDatabase } from '../../../test/support/database';
import { TypeOrmDeliberationStore } from './deliberation.store';
import { ApiKeysRepository } from './repositories/api-keys.repository';
import { BudgetsRepository } from './repositories/budgets.repository';
import { DeliberationsRepository } from './repositories/deliberations.repository';
import { UsageRepository } from './repositories/usage.repository';
import {
  UnstoredCalls,
  callDigest,
  recordLostCalls,
  type LostCall,
  type UnstoredCall,
} from './unstored-calls';
import { sleep } from '../../../test/support/wait';

let scratch: ScratchDatabase;
let db: DataSource;

beforeAll(async () => {
  scratch = await scratchDatabase({ prefix: 'conclave_u', poolSize: 2 });
  db = scratch.db;
});

afterAll(async () => {
  await scratch?.drop();
});

async function newMessage(): Promise<{ userId: string; messageId: string }> {
  const { userId } = await new ApiKeysRepository(db).createUserWithKey(`u-${randomUUID()}`);
  const started = await new DeliberationsRepository(db).startTurn(
    {
      userId,
      mode: 'council',
      userContent: 'Which is better?',
      config: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
      firstStage: 'stage1',
    },
    null,
    () => undefined,
  );
  if (!started) throw new Error('no turn');
  return { userId, messageId: started.messageId };
}

const call = (messageId: string, key: string, overrides: Partial<UnstoredCall> = {}): UnstoredCall => ({
  messageId,
  stage: 'stage1',
  key,
  model: 'local/a',
  ok: true,
  responseTimeMs: 1200,
  promptTokens: 100,
  completionTokens: 20,
  costUsd: 0.0015,
  simulated: false,
  digest: callDigest('an answer of its own'),
  ...overrides,
});

const stored = (messageId: string, key: string) =>
  db.query(
    `INSERT INTO model_calls (message_id, stage, call_key, model, ok, content, response_time_ms, prompt_tokens,
       completion_tokens, cost_usd) VALUES ($1, 'stage1', $2, 'local/a', true, 'x', 10, 100, 20, 0.0015)`,
    [messageId, key],
  );

describe('UnstoredCalls', () => {
  it('counts the usage of calls it records in usage and the monthly spend, never as a stage outcome', async () => {
    const { userId, messageId } = await newMessage();
    await stored(messageId, 'a');
    const ledger = new UnstoredCalls(db);
    ledger.add([call(messageId, 'b'), call(messageId, 'b'), call(messageId, 'title', { stage: 'title' })]);
    await ledger.flush();
    expect(ledger.size).toBe(0);

    expect(await new UsageRepository(db).ofMessage(messageId)).toEqual({
      promptTokens: 400,
      completionTokens: 80,
      costUsd: expect.closeTo(0.006, 6) as number,
    });
    expect(await new BudgetsRepository(db).spentThisMonth(userId)).toBeCloseTo(0.006, 6);
    const loaded = await new TypeOrmDeliberationStore(db).load(messageId, 0);
    expect(loaded?.outcomes).toEqual({ stage1: [expect.objectContaining({ key: 'a' })] });
    expect((await new DeliberationsRepository(db).calls(messageId)).map((c) => c.stage)).toEqual(['stage1']);
  });

  it('does not count twice a call whose outcome was stored before it was given up', async () => {
    const { messageId } = await newMessage();
    await stored(messageId, 'a');
    const ledger = new UnstoredCalls(db);
    // 'a' was stored by the write that seemed to fail (its row is this call's: same text, same
    // time); 'b' is stored later, by a rerun's own call.
    ledger.add([call(messageId, 'a', { responseTimeMs: 10, digest: callDigest('x') }), call(messageId, 'b')]);
    await stored(messageId, 'b');
    await ledger.flush();
    const [{ n }]: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'unstored'`,
      [messageId],
    );
    expect(n).toBe(1);
  });

  it("tells a call's own stored row by the row, whatever PostgreSQL's and the worker's clocks say", async () => {
    const { messageId } = await newMessage();
    // This call's row was written (the reply lost) by a PostgreSQL whose clock runs a minute ahead.
    await stored(messageId, 'a');
    await db.query(`UPDATE model_calls SET created_at = now() + interval '1 minute' WHERE message_id = $1`, [
      messageId,
    ]);
    const ledger = new UnstoredCalls(db);
    ledger.add([call(messageId, 'a', { responseTimeMs: 10, digest: callDigest('x') })]);
    await ledger.flush();
    const [{ n }]: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'unstored'`,
      [messageId],
    );
    expect(n).toBe(0);
  });

  it('drops the calls of a deliberation that is gone, and keeps at most its limit', async () => {
    const { messageId } = await newMessage();
    const ledger = new UnstoredCalls(db, { limit: 2 });
    ledger.add([call(randomUUID(), 'a'), call(messageId, 'b'), call(messageId, 'c')]);
    expect(ledger.size).toBe(2);
    await ledger.flush();
    expect(ledger.size).toBe(0);
    const rows: { call_key: string }[] = await db.query(
      `SELECT call_key FROM model_calls WHERE message_id = $1 AND stage = 'unstored' ORDER BY call_key`,
      [messageId],
    );
    expect(rows.map((r) => r.call_key.split(':').slice(0, 2).join(':'))).toEqual(['stage1:b', 'stage1:c']);
  });

  it('does not count a call twice when a write that was applied lost its reply and is tried again', async () => {
    const { messageId } = await newMessage();
    // The real database, whose first answer is lost after the insert committed (the connection
    // went between the commit and its reply): the ledger sees "storage unavailable" and tries again.
    let lose = true;
    const flaky = {
      query: async (...args: Parameters<DataSource['query']>): Promise<unknown> => {
        const result: unknown = await db.query(...args);
        if (lose) {
          lose = false;
          throw new Error('Connection terminated unexpectedly');
        }
        return result;
      },
    } as unknown as DataSource;
    const ledger = new UnstoredCalls(flaky);
    ledger.add([call(messageId, 'b')]);
    // The lost reply puts the call back; a later flush (its own timer's or this one) writes it again.
    for (let i = 0; i < 50 && (lose || ledger.size > 0); i++) await ledger.flush();
    expect(lose).toBe(false);
    expect(ledger.size).toBe(0);
    const [{ n }]: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'unstored'`,
      [messageId],
    );
    expect(n).toBe(1);
  });

  it('writes a backlog batch after batch while PostgreSQL takes them, not one batch per interval', async () => {
    const { messageId } = await newMessage();
    const ledger = new UnstoredCalls(db, { intervalMs: 60_000 });
    ledger.add(Array.from({ length: 1200 }, (_, i) => call(messageId, `k${i}`)));
    // Well within the interval: the three batches follow each other.
    const deadline = Date.now() + 30_000;
    while (ledger.size > 0 && Date.now() < deadline) await sleep(20);
    expect(ledger.size).toBe(0);
    // The last batch has left the queue; its insert may still be under way.
    await ledger.flush();
    const [{ n }]: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'unstored'`,
      [messageId],
    );
    expect(n).toBe(1200);
    await ledger.close();
  });

  it('on close, writes every call that waits, not only the first 500', async () => {
    const { messageId } = await newMessage();
    const ledger = new UnstoredCalls(db, { intervalMs: 60_000 });
    ledger.add(Array.from({ length: 1200 }, (_, i) => call(messageId, `k${i}`)));
    await ledger.close();
    expect(ledger.size).toBe(0);
    const [{ n }]: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'unstored'`,
      [messageId],
    );
    expect(n).toBe(1200);
  });
});

describe('recordLostCalls', () => {
  const lost = (messageId: string, key: string, overrides: Partial<LostCall> = {}): LostCall => ({
    messageId,
    stage: 'stage1',
    key,
    model: 'local/a',
    worker: 'host:1:abcd',
    startedAt: 1_000_000,
    listedAt: 1_002_500,
    ...overrides,
  });

  it('counts each call once, whoever records it, with unknown tokens and cost', async () => {
    const { userId, messageId } = await newMessage();
    await stored(messageId, 'c');
    const calls = [lost(messageId, 'a'), lost(messageId, 'b', { model: 'sim/b' })];
    expect(await recordLostCalls(db, calls)).toBe(2);
    // A second worker taking the same stage over, or the same one after a retry: nothing more.
    expect(await recordLostCalls(db, calls)).toBe(0);
    const rows: Record<string, unknown>[] = await db.query(
      `SELECT model, ok, prompt_tokens, completion_tokens, cost_usd, simulated, response_time_ms, error
       FROM model_calls WHERE message_id = $1 AND stage = 'unstored' ORDER BY model`,
      [messageId],
    );
    expect(rows).toEqual([
      expect.objectContaining({
        model: 'local/a',
        ok: false,
        prompt_tokens: null,
        cost_usd: null,
        simulated: false,
      }),
      expect.objectContaining({ model: 'sim/b', ok: false, completion_tokens: null, simulated: true }),
    ]);
    expect(rows[0].response_time_ms).toBe(2500);
    // Counted as calls; their unknown cost adds nothing (the stored call's does).
    expect(await new UsageRepository(db).ofMessage(messageId)).toEqual({
      promptTokens: 100,
      completionTokens: 20,
      costUsd: 0.0015,
    });
    expect(await new BudgetsRepository(db).spentThisMonth(userId)).toBeCloseTo(0.0015, 6);
  });

  it('skips a call whose own row was stored before its worker died, and deliberations that are gone', async () => {
    const { messageId } = await newMessage();
    await stored(messageId, 'a');
    const gone = randomUUID();
    expect(await recordLostCalls(db, [lost(messageId, 'a'), lost(gone, 'b')])).toBe(0);
  });

  it('counts calls of the same key lost by two workers (two deaths) as two calls', async () => {
    const { messageId } = await newMessage();
    const n = await recordLostCalls(db, [
      lost(messageId, 'a'),
      lost(messageId, 'a', { worker: 'host:2:ef01', startedAt: 1_010_000 }),
    ]);
    expect(n).toBe(2);
  });
});

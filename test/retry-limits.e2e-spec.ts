import type { BatchAccepted, BatchView } from '@conclave/contracts';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * A retry of a batch's failed items runs them again: each is a batch item like any other and takes
 * from RATE_LIMIT_BATCH_ITEMS_PER_HOUR (issue 33, item 1: one request must not fan out past the
 * limits). API-key mode, real stack; every member fails, so every item fails.
 */
describe('retry-failed counts its items against the hourly batch-item limit', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey', RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '5' });
  let key = '';
  beforeAll(async () => {
    await stack.start();
    key = await stack.createUser('carol');
  }, 60_000);
  afterAll(() => stack.stop());

  const batchView = async (batchId: string) =>
    (await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: key })).body;

  it('refuses a retry that would run past the limit, storing nothing', async () => {
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      token: key,
      body: {
        defaults: { mode: 'council', councilModels: ['sim/a:fail', 'sim/b:fail'], chairmanModel: 'sim/c' },
        items: Array.from({ length: 3 }, (_, i) => ({ question: `Question ${i}?` })),
      },
    });
    expect(accepted.status).toBe(202);
    const { batchId } = accepted.body;
    const deadline = Date.now() + 30_000;
    while ((await batchView(batchId)).finishedAt === null) {
      if (Date.now() > deadline) throw new Error('the batch did not finish');
      await sleep(100);
    }
    expect(await batchView(batchId)).toMatchObject({ failed: 3, retriedItems: 0 });

    // 3 of the hour's 5 items are spent: 3 more would be 6.
    const retry = await fetch(`${stack.baseUrl}/api/batches/${batchId}/retry-failed`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(retry.status).toBe(429);
    expect(retry.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await retry.json()) as { message: string }).message).toMatch(/RATE_LIMIT_BATCH_ITEMS_PER_HOUR/);
    const after = await batchView(batchId);
    expect(after).toMatchObject({ failed: 3, retriedItems: 0 });
    expect(after.finishedAt).not.toBeNull();
    const [{ attempts }]: { attempts: number }[] = await stack.db.query(
      `SELECT COUNT(*)::int AS attempts FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
      [batchId],
    );
    expect(attempts).toBe(3);
  }, 60_000);
});

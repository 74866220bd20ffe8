import type { BatchAccepted, BatchComparison, BatchReport, BatchView } from '@conclave/contracts';
import type { QueryRunner } from 'typeorm';
import { BatchReportService } from '../apps/gateway/src/batches/batch-report';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * Batch reports and comparisons under one user's flood (issue 33, item 2), on the real stack in
 * API-key mode with two users: computations take turns per user, each user's waiting work is
 * bounded (429 with Retry-After naming REPORT_QUEUE_PER_USER), and a finished batch's report or
 * comparison is computed once and answered from the cache until the batch changes.
 *
 * The computation is held still by a lock on deliberation_stages (which every report reads after
 * the ownership check), so admission and order are observed without depending on timings.
 */

const COUNCIL = { councilModels: ['sim/athena', 'sim/hermes'], chairmanModel: 'sim/chairman' };
const FAILING_CHAIR = { councilModels: ['sim/athena', 'sim/hermes'], chairmanModel: 'sim/chair:fail' };
const PER_USER = 2;

interface Answer {
  label: string;
  status: number;
  retryAfter: string | null;
  text: string;
}

describe('batch reports: fair across users, bounded per user, finished batches cached', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    WORKER_CONCURRENCY: '16',
    REPORT_SLOTS: '1',
    REPORT_QUEUE_PER_USER: String(PER_USER),
  });
  let alice = '';
  let bob = '';
  const aliceBatches: string[] = [];
  let bobBatch = '';
  /** Asked for the first time in the cache test. */
  let bobSecondBatch = '';

  async function submit(token: string, name: string, modeConfig: unknown, failAt = -1): Promise<string> {
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      token,
      body: {
        name,
        defaults: { mode: 'council', modeConfig },
        items: [0, 1, 2].map((i) =>
          i === failAt
            ? { question: `Question ${i}?`, modeConfig: FAILING_CHAIR }
            : { question: `Question ${i}?` },
        ),
      },
    });
    if (accepted.status !== 202) throw new Error(`batch refused: ${JSON.stringify(accepted.body)}`);
    return accepted.body.batchId;
  }

  async function finished(token: string, batchId: string, after: string | null = null): Promise<BatchView> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const view = (await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token })).body;
      const done = view.status !== 'queued' && view.status !== 'running' && view.finishedAt !== null;
      if (done && view.finishedAt !== after) return view;
      if (Date.now() > deadline) throw new Error(`batch ${batchId} not finished: ${JSON.stringify(view)}`);
      await sleep(100);
    }
  }

  async function ask(label: string, token: string, url: string): Promise<Answer> {
    const response = await fetch(`${stack.baseUrl}${url}`, { headers: { authorization: `Bearer ${token}` } });
    return {
      label,
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      text: await response.text(),
    };
  }

  /** conclave_batch_reports_total by `kind/outcome`, from the gateway's /metrics. */
  async function counted(): Promise<Record<string, number>> {
    const text = await (await fetch(`${stack.baseUrl}/metrics`)).text();
    const counts: Record<string, number> = {};
    for (const line of text.split('\n')) {
      if (!line.startsWith('conclave_batch_reports_total{')) continue;
      const kind = /kind="([a-z]+)"/.exec(line)?.[1];
      const outcome = /outcome="([a-z]+)"/.exec(line)?.[1];
      counts[`${kind}/${outcome}`] = Number(line.split(' ').pop());
    }
    return counts;
  }

  const delta = (before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(
      Object.keys(after)
        .map((k) => [k, after[k] - (before[k] ?? 0)] as const)
        .filter(([, n]) => n !== 0),
    );

  async function until(what: string, check: () => boolean): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(20);
    }
  }

  beforeAll(async () => {
    await stack.start();
    alice = await stack.createUser('alice');
    bob = await stack.createUser('bob');
    for (const name of ['a1', 'a2', 'a3']) aliceBatches.push(await submit(alice, name, COUNCIL));
    bobBatch = await submit(bob, 'b1', COUNCIL, 1);
    bobSecondBatch = await submit(bob, 'b2', COUNCIL);
    for (const id of aliceBatches) await finished(alice, id);
    expect(await finished(bob, bobBatch)).toMatchObject({ complete: 2, failed: 1 });
    await finished(bob, bobSecondBatch);
  }, 120_000);
  afterAll(() => stack.stop());

  it("admits a second user's report while the first floods, and serves it before the flood's queued work", async () => {
    const service = stack.app!.get(BatchReportService);
    const [a1, a2, a3] = aliceBatches;
    // Nine different computations of alice's (three reports, six ordered comparisons).
    const urls = [
      ...aliceBatches.map((id) => `/api/batches/${id}/report`),
      ...[
        [a1, a2],
        [a2, a1],
        [a1, a3],
        [a3, a1],
        [a2, a3],
        [a3, a2],
      ].map(([a, b]) => `/api/batches/compare?a=${a}&b=${b}`),
    ];

    const lock: QueryRunner = stack.db.createQueryRunner();
    await lock.connect();
    await lock.startTransaction();
    await lock.query('LOCK TABLE deliberation_stages IN ACCESS EXCLUSIVE MODE');
    const order: string[] = [];
    const record = (answer: Promise<Answer>) =>
      answer.then((a) => {
        order.push(a.label);
        return a;
      });
    let flood: Promise<Answer>[] = [];
    let bobsReport: Promise<Answer> | undefined;
    try {
      flood = urls.map((url, i) => record(ask(`alice ${i}`, alice, url)));
      // One runs (held by the lock), PER_USER wait, the rest are refused at once.
      await until('the refusals', () => order.length >= urls.length - 1 - PER_USER);
      expect(service.busy).toEqual({ running: 1, waiting: PER_USER });
      const refused = (await Promise.all(flood.filter((_, i) => order.includes(`alice ${i}`)))).map((a) => ({
        status: a.status,
        retryAfter: a.retryAfter,
        message: (JSON.parse(a.text) as { message: string }).message,
      }));
      expect(refused).toHaveLength(urls.length - 1 - PER_USER);
      for (const answer of refused) {
        expect(answer.status).toBe(429);
        expect(answer.retryAfter).toMatch(/^[1-9]\d*$/);
        expect(answer.message).toContain(`at most ${PER_USER}`);
        expect(answer.message).toContain('REPORT_QUEUE_PER_USER');
      }
      order.length = 0;

      // Bob's report waits (it is not refused), behind alice's running one only.
      bobsReport = record(ask('bob', bob, `/api/batches/${bobBatch}/report`));
      await until("bob's report to wait", () => service.busy.waiting === PER_USER + 1);
      expect(order).toEqual([]);
    } finally {
      await lock.commitTransaction();
      await lock.release();
    }
    const bobs = await bobsReport!;
    const admitted = (await Promise.all(flood)).filter((a) => a.status !== 429);
    expect(bobs.status).toBe(200);
    expect(admitted.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(order.map((label) => label.split(' ')[0])).toEqual(['alice', 'bob', 'alice', 'alice']);
    expect(service.busy).toEqual({ running: 0, waiting: 0 });
    expect((JSON.parse(bobs.text) as BatchReport).partial).toBe(false);
  }, 60_000);

  it("answers a finished batch's report again from the cache, byte for byte, and only to its owner", async () => {
    const before = await counted();
    const fresh = await ask('bob', bob, `/api/batches/${bobSecondBatch}/report`);
    expect(fresh.status).toBe(200);
    expect((JSON.parse(fresh.text) as BatchReport).partial).toBe(false);
    expect(delta(before, await counted())).toEqual({ 'report/computed': 1 });
    const again = await ask('bob', bob, `/api/batches/${bobSecondBatch}/report`);
    const third = await ask('bob', bob, `/api/batches/${bobSecondBatch}/report`);
    expect(again.status).toBe(200);
    // generatedAt included: the cached answer is the computed one, not a recomputation.
    expect(again.text).toBe(fresh.text);
    expect(third.text).toBe(fresh.text);
    const markdown = await ask('bob', bob, `/api/batches/${bobSecondBatch}/report?format=md`);
    expect(markdown.status).toBe(200);
    expect(markdown.text).toContain('b2');
    const foreign = await ask('alice', alice, `/api/batches/${bobSecondBatch}/report`);
    expect(foreign.status).toBe(404);
    expect(foreign.text).not.toContain('Question');
    expect(delta(before, await counted())).toEqual({ 'report/computed': 1, 'report/cached': 3 });

    // A comparison is kept too (it may already have been computed in the flood: ask twice).
    const [a1, a2] = aliceBatches;
    const first = await ask('alice', alice, `/api/batches/compare?a=${a1}&b=${a2}`);
    const middle = await counted();
    const second = await ask('alice', alice, `/api/batches/compare?a=${a1}&b=${a2}`);
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(delta(middle, await counted())).toEqual({ 'comparison/cached': 1 });
    expect((JSON.parse(second.text) as BatchComparison).a.batchId).toBe(a1);
    const foreignCompare = await ask('bob', bob, `/api/batches/compare?a=${a1}&b=${a2}`);
    expect(foreignCompare.status).toBe(404);
  });

  it('computes the report anew once failed items are retried, and once an item is deleted', async () => {
    const bobFirstReport = (await ask('bob', bob, `/api/batches/${bobBatch}/report`)).text;
    expect((await ask('bob', bob, `/api/batches/${bobBatch}/report`)).text).toBe(bobFirstReport);
    const before = (JSON.parse(bobFirstReport) as BatchReport).models.find(
      (m) => m.model === 'sim/chair:fail',
    );
    expect(before?.calls).toBe(1);
    const view = (await stack.api<BatchView>('GET', `/api/batches/${bobBatch}`, { token: bob })).body;
    const retry = await stack.api('POST', `/api/batches/${bobBatch}/retry-failed`, { token: bob });
    expect(retry.status).toBe(202);
    await finished(bob, bobBatch, view.finishedAt);

    const counts = await counted();
    const fresh = await ask('bob', bob, `/api/batches/${bobBatch}/report`);
    expect(fresh.status).toBe(200);
    expect(fresh.text).not.toBe(bobFirstReport);
    const report = JSON.parse(fresh.text) as BatchReport;
    // The retried attempt failed again: the chairman's calls are counted over both attempts.
    expect(report.models.find((m) => m.model === 'sim/chair:fail')?.calls).toBe(2);
    expect(report.generatedAt > (JSON.parse(bobFirstReport) as BatchReport).generatedAt).toBe(true);
    const cached = await ask('bob', bob, `/api/batches/${bobBatch}/report`);
    expect(cached.text).toBe(fresh.text);
    expect(delta(counts, await counted())).toEqual({ 'report/computed': 1, 'report/cached': 1 });

    // Deleting one item's conversation changes alice's batch: its report is computed anew.
    const a3 = aliceBatches[2];
    const kept = await ask('alice', alice, `/api/batches/${a3}/report`);
    expect((JSON.parse(kept.text) as BatchReport).items.total).toBe(3);
    const [conversation]: { conversation_id: string }[] = await stack.db.query(
      `SELECT conversation_id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND batch_index = 0`,
      [a3],
    );
    const removed = await stack.api('DELETE', `/api/conversations/${conversation.conversation_id}`, {
      token: alice,
    });
    expect(removed.status).toBe(204);
    const afterDelete = await counted();
    const smaller = await ask('alice', alice, `/api/batches/${a3}/report`);
    expect((JSON.parse(smaller.text) as BatchReport).items.total).toBe(2);
    expect(delta(afterDelete, await counted())).toEqual({ 'report/computed': 1 });
  }, 90_000);
});

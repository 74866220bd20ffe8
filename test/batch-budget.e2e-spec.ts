import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type {
  BatchAccepted,
  BatchEstimate,
  BatchResultLine,
  BatchRetryAccepted,
  BatchView,
  DeliberationEstimate,
  UserBudgetView,
} from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider } from '@conclave/llm';
import { parse } from 'csv-parse/sync';
import type { Socket } from 'socket.io-client';
import { describeBatch } from '../apps/cli/src/batch-view';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';

/**
 * Budgets and retries (issue 21, "cost during"). Simulated models cost nothing, so the panels here
 * are served by the local OpenAI-compatible stand-in, which reports `usage.cost` on every call.
 */
const COST_PER_CALL = 0.01;
/** Council of two and a chairman, no title: 2 answers + 2 rankings + 1 synthesis. */
const CALLS_PER_ITEM = 5;
const COUNCIL = { councilModels: ['local/alpha', 'local/beta'], chairmanModel: 'local/chair' };
const ROOT = path.resolve(__dirname, '..');

function lastUserContent(messages: unknown[]): string {
  const user = [...(messages as { role: string; content: string }[])]
    .reverse()
    .find((m) => m.role === 'user');
  return user?.content ?? '';
}

/** Whether calls for questions marked FLAKY fail (a provider outage hitting some items). */
let outage = false;

function script({ request }: ScriptContext): ChatBehaviour {
  const prompt = lastUserContent(request.messages);
  if (outage && prompt.includes('FLAKY')) return { kind: 'http-error', status: 400, message: 'outage' };
  const content = prompt.includes(RANKING_PROMPT_MARKER)
    ? 'Thoughts.\n\nFINAL RANKING:\n1. Response B\n2. Response A'
    : prompt.includes(SYNTHESIS_PROMPT_MARKER)
      ? 'The synthesis.'
      : prompt.startsWith('Generate a brief title')
        ? 'A Title'
        : `answer of ${request.model}`;
  return {
    kind: 'success',
    content,
    promptTokens: 100,
    completionTokens: 20,
    cost: COST_PER_CALL,
    delayMs: 20,
  };
}

/** The first `batch_complete` of the batch that `accept`s (a subscription's first snapshot may be an old one). */
function waitForBatch(
  socket: Socket,
  batchId: string,
  accept: (view: BatchView) => boolean = () => true,
  timeoutMs = 60_000,
): Promise<BatchView> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`batch ${batchId} did not finish`)), timeoutMs);
    const onComplete = (view: BatchView) => {
      if (view.batchId !== batchId || !accept(view)) return;
      clearTimeout(timer);
      socket.off('batch_complete', onComplete);
      resolve(view);
    };
    socket.on('batch_complete', onComplete);
    void socket.emitWithAck('subscribe', { batchId });
  });
}

describe('budgets and retries', () => {
  let server: ChatCompletionsServer;
  // OPENAI_BASE_URL marks a real provider as configured; the worker's provider is the stand-in.
  const stack = new TestStack({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', AUTH_MODE: 'apikey' });
  let admin = '';
  let alice = '';
  let bob = '';

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    await stack.start({
      realProvider: new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'k' }),
    });
    admin = await stack.createUser('root', 'admin');
    alice = await stack.createUser('alice');
    bob = await stack.createUser('bob');
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  const batchOf = (
    items: number,
    extra: Record<string, unknown> = {},
    question = (i: number) => `Question ${i}?`,
  ) => ({
    defaults: { mode: 'council', ...COUNCIL },
    items: Array.from({ length: items }, (_, i) => ({ question: question(i) })),
    ...extra,
  });

  describe('a batch with maxCostUsd', () => {
    it('is validated: a number greater than 0', async () => {
      for (const maxCostUsd of [0, -1, '5', null, 1e12]) {
        const { status, body } = await stack.api<{ fields: Record<string, string> }>('POST', '/api/batches', {
          token: bob,
          body: batchOf(1, { maxCostUsd }),
        });
        if (maxCostUsd === null) {
          expect(status).toBe(202);
          continue;
        }
        expect(status).toBe(400);
        expect(Object.keys(body.fields)).toEqual(['maxCostUsd']);
      }
      const upload = await stack.api<{ fields: Record<string, string> }>(
        'POST',
        `/api/batches?mode=jury&maxCostUsd=lots`,
        { token: bob, raw: 'question,content\nq,c\n', headers: { 'content-type': 'text/csv' } },
      );
      expect(upload.status).toBe(400);
      expect(Object.keys(upload.body.fields)).toEqual(['maxCostUsd']);
    });

    it('stops starting items once its recorded cost reaches the budget, and ends budget_exhausted', async () => {
      const total = 12;
      const maxCostUsd = 0.12; // two and a half items' worth
      const estimate = await stack.api<BatchEstimate>('POST', '/api/batches?dryRun=true', {
        token: bob,
        body: batchOf(total, { maxCostUsd, concurrency: 2 }),
      });
      expect(estimate.status).toBe(200);
      expect(estimate.body).toMatchObject({ maxCostUsd, calls: { min: total * CALLS_PER_ITEM } });
      // The stand-in's models are not in any price list: unknown, said plainly.
      expect(estimate.body.costUsd).toBeNull();
      expect(estimate.body.withinBudget).toBe('unknown');

      const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
        token: bob,
        body: batchOf(total, { maxCostUsd, concurrency: 2, name: 'budgeted' }),
      });
      expect(accepted.status).toBe(202);
      const socket = await stack.connect(bob);
      const done = await waitForBatch(socket, accepted.body.batchId);
      socket.disconnect();
      expect(done.status).toBe('budget_exhausted');
      expect(done.maxCostUsd).toBe(maxCostUsd);
      expect(done.finishedAt).not.toBeNull();
      // Items already started finish; the rest never start.
      expect(done.failed).toBe(0);
      expect(done.complete + done.cancelled).toBe(total);
      expect(done.complete).toBeGreaterThanOrEqual(Math.ceil(maxCostUsd / (COST_PER_CALL * CALLS_PER_ITEM)));
      expect(done.complete).toBeLessThanOrEqual(Math.ceil(maxCostUsd / (COST_PER_CALL * CALLS_PER_ITEM)) + 2);
      expect(done.cancelled).toBeGreaterThan(0);
      expect(done.usage.costUsd).toBeGreaterThanOrEqual(maxCostUsd);
      expect(done.usage.costUsd).toBeCloseTo(done.complete * CALLS_PER_ITEM * COST_PER_CALL, 6);

      // Everywhere a status shows: the batch, the list, the exports, the CLI.
      const view = await stack.api<BatchView>('GET', `/api/batches/${accepted.body.batchId}`, { token: bob });
      expect(view.body).toMatchObject({ status: 'budget_exhausted', complete: done.complete });
      const list = await stack.api<BatchView[]>('GET', '/api/batches', { token: bob });
      expect(list.body.find((b) => b.batchId === accepted.body.batchId)?.status).toBe('budget_exhausted');
      const jsonl = await stack.api<string>(
        'GET',
        `/api/batches/${accepted.body.batchId}/results?format=jsonl`,
        {
          token: bob,
        },
      );
      const lines = jsonl.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as BatchResultLine);
      expect(lines).toHaveLength(total);
      const cancelled = lines.filter((l) => l.status === 'cancelled');
      expect(cancelled).toHaveLength(done.cancelled);
      for (const line of cancelled) {
        expect(line.error).toMatch(/budget of \$0\.12 \(maxCostUsd\) was reached .*not started/);
        expect(line.attempt).toBe(1);
      }
      // Each ended as a stop ends a deliberation: its stored `cancelled { reason }`, the only event.
      const watcher = await stack.connect(bob);
      const replayed = await stack.follow(cancelled[0].messageId, { socket: watcher });
      watcher.disconnect();
      expect(replayed).toEqual([
        expect.objectContaining({ type: 'cancelled', seq: 1, reason: cancelled[0].error }),
      ]);
      // Submission order: the cancelled items are the last ones.
      expect(lines.slice(0, done.complete).every((l) => l.status === 'complete')).toBe(true);
      const csv = await stack.api<string>('GET', `/api/batches/${accepted.body.batchId}/results?format=csv`, {
        token: bob,
      });
      const rows = parse(csv.body, { columns: true }) as Record<string, string>[];
      expect(rows.filter((r) => r.status === 'cancelled')).toHaveLength(done.cancelled);
      expect(describeBatch(view.body)).toMatch(/status\s+budget_exhausted/);
      expect(describeBatch(view.body)).toMatch(/budget\s+\$0\.12 \(maxCostUsd\): reached/);

      // Spent: a retry would start nothing.
      const retry = await stack.api<{ message: string }>(
        'POST',
        `/api/batches/${accepted.body.batchId}/retry-failed`,
        { token: bob },
      );
      expect(retry.status).toBe(409);
      expect(retry.body.message).toMatch(/spent its budget/);
    });
  });

  describe('retry-failed', () => {
    it('re-runs only the items a provider outage failed, as new attempts, and the batch finishes again', async () => {
      outage = true;
      const total = 6;
      const flaky = new Set([1, 4]);
      const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
        token: bob,
        body: batchOf(total, { concurrency: 3 }, (i) =>
          flaky.has(i) ? `FLAKY question ${i}?` : `Question ${i}?`,
        ),
      });
      const { batchId } = accepted.body;
      const socket = await stack.connect(bob);
      const first = await waitForBatch(socket, batchId);
      expect(first).toMatchObject({ status: 'complete', complete: 4, failed: 2, retriedItems: 0 });

      // 404 for another user's batch, 409 while one runs (checked below).
      const foreign = await stack.api('POST', `/api/batches/${batchId}/retry-failed`, { token: alice });
      expect(foreign.status).toBe(404);
      const notUuid = await stack.api('POST', `/api/batches/nope/retry-failed`, { token: bob });
      expect(notUuid.status).toBe(404);

      outage = false;
      const finished = waitForBatch(socket, batchId, (view) => view.retriedItems > 0);
      const retry = await stack.api<BatchRetryAccepted>('POST', `/api/batches/${batchId}/retry-failed`, {
        token: bob,
      });
      expect(retry.status).toBe(202);
      expect(retry.body).toEqual({ batchId, retried: 2, status: 'running' });
      const running = await stack.api<{ message: string }>('POST', `/api/batches/${batchId}/retry-failed`, {
        token: bob,
      });
      // Either still running (409), or already done with nothing failed (409 too).
      expect(running.status).toBe(409);
      const again = await finished;
      socket.disconnect();
      expect(again).toMatchObject({ status: 'complete', total, complete: total, failed: 0, retriedItems: 2 });
      expect(again.finishedAt).not.toBeNull();

      const lines = (
        await stack.api<string>('GET', `/api/batches/${batchId}/results?format=jsonl`, { token: bob })
      ).body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as BatchResultLine);
      expect(lines.map((l) => [l.index, l.status, l.attempt])).toEqual(
        Array.from({ length: total }, (_, i) => [i, 'complete', flaky.has(i) ? 2 : 1]),
      );
      expect(lines[1].question).toBe('FLAKY question 1?');
      // The failed attempts are kept (their conversations and calls), linked to the same items.
      const attempts: { batch_index: number; attempt: number; status: string; superseded: boolean }[] =
        await stack.db.query(
          `SELECT batch_index, attempt, status, superseded_at IS NOT NULL AS superseded FROM messages
           WHERE batch_id = $1 AND role = 'assistant' AND batch_index IN (1, 4) ORDER BY batch_index, attempt`,
          [batchId],
        );
      expect(attempts).toEqual([
        { batch_index: 1, attempt: 1, status: 'failed', superseded: true },
        { batch_index: 1, attempt: 2, status: 'complete', superseded: false },
        { batch_index: 4, attempt: 1, status: 'failed', superseded: true },
        { batch_index: 4, attempt: 2, status: 'complete', superseded: false },
      ]);
      const csv = await stack.api<string>('GET', `/api/batches/${batchId}/results?format=csv`, {
        token: bob,
      });
      const rows = parse(csv.body, { columns: true }) as Record<string, string>[];
      expect(rows.map((r) => r.attempt)).toEqual(['1', '2', '1', '1', '2', '1']);

      // Nothing failed now: nothing to retry.
      const none = await stack.api<{ message: string }>('POST', `/api/batches/${batchId}/retry-failed`, {
        token: bob,
      });
      expect(none.status).toBe(409);
      expect(none.body.message).toMatch(/no failed items/);
    });
  });

  describe('a monthly budget per user', () => {
    const setBudget = (name: string, body: unknown, token = admin) =>
      stack.api<UserBudgetView & { fields?: Record<string, string> }>(
        'PUT',
        `/api/admin/users/${name}/budget`,
        {
          token,
          body,
        },
      );

    it('is set by an admin only, validated', async () => {
      expect((await setBudget('alice', { monthlyBudgetUsd: 1 }, alice)).status).toBe(403);
      expect((await setBudget('nobody', { monthlyBudgetUsd: 1 })).status).toBe(404);
      for (const bad of [
        { monthlyBudgetUsd: -1 },
        { monthlyBudgetUsd: 'ten' },
        {},
        { monthlyBudgetUsd: 1, other: 1 },
      ]) {
        const { status, body } = await setBudget('alice', bad);
        expect(status).toBe(400);
        expect(JSON.stringify(body.fields)).toMatch(/monthlyBudgetUsd|other/);
      }
      const set = await setBudget('alice', { monthlyBudgetUsd: 0.03 });
      expect(set).toEqual({
        status: 200,
        body: { user: 'alice', monthlyBudgetUsd: 0.03, spentThisMonthUsd: 0 },
      });
    });

    it('answers 402 naming the budget and the spend once this month is at or over it', async () => {
      const first = await stack.api<{ messageId: string }>('POST', '/api/deliberations', {
        token: alice,
        body: { question: 'Within budget', ...COUNCIL },
      });
      expect(first.status).toBe(202);
      const socket = await stack.connect(alice);
      const events = await stack.follow(first.body.messageId, { socket });
      socket.disconnect();
      expect(events.at(-1)?.type).toBe('complete');
      // 5 calls + the title: $0.06 against $0.03.
      const refused = await stack.api<{ message: string }>('POST', '/api/deliberations', {
        token: alice,
        body: { question: 'Over budget', ...COUNCIL },
      });
      expect(refused.status).toBe(402);
      expect(refused.body.message).toBe(
        'Monthly budget reached: your budget is $0.03 a month and $0.06 is recorded this month (UTC), so the ' +
          'deliberation was not started. Ask an admin to raise the budget, or wait for the next month.',
      );
      const batch = await stack.api<{ message: string }>('POST', '/api/batches', {
        token: alice,
        body: batchOf(1),
      });
      expect(batch.status).toBe(402);
      expect(batch.body.message).toMatch(
        /budget is \$0\.03 .* \$0\.06 is recorded .*the batch was not started/,
      );
      // Validation still comes first.
      expect((await stack.api('POST', '/api/deliberations', { token: alice, body: {} })).status).toBe(400);
      // A dry run still plans, and says the real request would be refused.
      const dry = await stack.api<DeliberationEstimate>('POST', '/api/deliberations?dryRun=true', {
        token: alice,
        body: { question: 'Would it?', ...COUNCIL },
      });
      expect(dry.status).toBe(200);
      expect(dry.body.budget).toEqual({ monthlyBudgetUsd: 0.03, spentThisMonthUsd: 0.06, overBudget: true });
      expect((await stack.api('GET', '/api/budget', { token: alice })).body).toEqual(dry.body.budget);
      // Others are not affected.
      expect(
        (
          await stack.api('POST', '/api/deliberations', {
            token: bob,
            body: { question: 'Fine', ...COUNCIL },
          })
        ).status,
      ).toBe(202);

      // Deleting the conversation does not give the money back.
      const deleted = await stack.api(
        'DELETE',
        `/api/conversations/${(await stack.db.query('SELECT conversation_id FROM messages WHERE id = $1', [first.body.messageId]))[0].conversation_id}`,
        { token: alice },
      );
      expect(deleted.status).toBe(204);
      expect(
        (
          await stack.api('POST', '/api/deliberations', {
            token: alice,
            body: { question: 'Again', ...COUNCIL },
          })
        ).status,
      ).toBe(402);
      expect((await setBudget('alice', { monthlyBudgetUsd: 0.03 })).body.spentThisMonthUsd).toBe(0.06);

      // Raised (here by the operator's command), the user may start again; removed, nothing stops them.
      const cli = await promisify(execFile)(
        process.execPath,
        [
          '-r',
          'ts-node/register/transpile-only',
          '-r',
          'tsconfig-paths/register',
          'apps/ops/src/set-budget.ts',
          '--user',
          'alice',
          '--usd',
          '20',
        ],
        { cwd: ROOT, env: { ...process.env, ...stack.env } },
      );
      expect(cli.stdout).toMatch(/user alice: monthly budget \$20; spent this month \(UTC\) \$0\.0600/);
      expect(
        (
          await stack.api('POST', '/api/deliberations', {
            token: alice,
            body: { question: 'Raised', ...COUNCIL },
          })
        ).status,
      ).toBe(202);
      expect((await setBudget('alice', { monthlyBudgetUsd: null })).body.monthlyBudgetUsd).toBeNull();
      expect((await stack.api('GET', '/api/budget', { token: alice })).body).toEqual({
        monthlyBudgetUsd: null,
      });
    });

    it('a budget of 0 stops everything, retries included', async () => {
      await setBudget('bob', { monthlyBudgetUsd: 0 });
      const refused = await stack.api<{ message: string }>('POST', '/api/deliberations', {
        token: bob,
        body: { question: 'No', ...COUNCIL },
      });
      expect(refused.status).toBe(402);
      const [batch]: { id: string }[] = await stack.db.query(
        `SELECT b.id FROM batches b JOIN users u ON u.id = b.user_id WHERE u.name = 'bob' ORDER BY b.created_at LIMIT 1`,
      );
      const retry = await stack.api('POST', `/api/batches/${batch.id}/retry-failed`, { token: bob });
      expect(retry.status).toBe(402);
      await setBudget('bob', { monthlyBudgetUsd: null });
    });
  });
});

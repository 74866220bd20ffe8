import type { DeliveredEvent, Usage } from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { leasedCallsOf } from '@conclave/redis';
import IORedis from 'ioredis';
import {
  startChatCompletionsServer,
  type ChatCompletionsServer,
} from '../libs/llm/src/testing/chat-completions-server';
import { COUNCIL_SEQUENCE, expectContiguous, modeEvents, TestStack } from './support/harness';
import { until } from './support/wait';

/**
 * Waits until a worker's heartbeat lists `n` first-stage calls of the deliberation in flight: the worker
 * killed after it must have its lost calls counted (calls begun in the last moments before a
 * death, not listed yet, are not).
 */
async function leased(stack: TestStack, messageId: string, n: number): Promise<void> {
  const redis = new IORedis(stack.config.redisUrl);
  try {
    await until(
      async () => {
        const leases = await redis.hgetall(`${stack.config.queuePrefix}:watch:leases`);
        return Object.values(leases).some(
          (raw) =>
            (leasedCallsOf(raw, messageId)?.calls.filter((c) => c.stage === 'stage1').length ?? 0) >= n,
        );
      },
      `a heartbeat listing ${n} calls in flight`,
      30_000,
    );
  } finally {
    redis.disconnect();
  }
}

/**
 * The usage-only rows of calls that died in flight with a worker: the models of the stage's calls,
 * and how many were the title's (a title call whose answer was not stored yet is lost too).
 */
async function lostCalls(stack: TestStack, messageId: string): Promise<{ models: string[]; titles: number }> {
  const rows: { model: string; title: boolean }[] = await stack.db.query(
    `SELECT model, call_key LIKE '%:title:title:%' AS title FROM model_calls
     WHERE message_id = $1 AND stage = 'unstored' ORDER BY model`,
    [messageId],
  );
  return {
    models: rows.filter((r) => !r.title).map((r) => r.model),
    titles: rows.filter((r) => r.title).length,
  };
}

describe('crash safety: a worker SIGKILLed mid-stage', () => {
  const stack = new TestStack({
    WORKER_LOCK_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
  });
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  it('another worker completes the deliberation: rows once, events without gap or duplicate', async () => {
    const first = await stack.spawnWorker();
    const { messageId } = await stack.deliberate({
      question: 'Survive a crash',
      councilModels: ['sim/slow1:delay4000@answer', 'sim/slow2:delay4000@answer', 'sim/fast'],
      chairmanModel: 'sim/fast',
    });
    const socket = await stack.connect();
    const events: DeliveredEvent[] = [];
    let fastAnswered: () => void = () => undefined;
    const fastDone = new Promise<void>((resolve) => (fastAnswered = resolve));
    const finished = new Promise<void>((resolve) => {
      socket.onAny((name: string, event: DeliveredEvent) => {
        events.push(event);
        if (
          event.type === 'model_progress' &&
          event.participant === 'sim/fast' &&
          event.state === 'succeeded'
        ) {
          fastAnswered();
        }
        if (name === 'complete' || name === 'error') resolve();
      });
    });
    expect(await socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });

    await fastDone; // the slow calls are still in flight
    await leased(stack, messageId, 2);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const startedBeforeKill = events.filter(
      (e) => e.type === 'model_progress' && e.state === 'started',
    ).length;
    expect(startedBeforeKill).toBe(3);
    expect(events.some((e) => e.type === 'stage1_complete')).toBe(false);

    await stack.spawnWorker();
    await finished;

    expectContiguous(events);
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const stored = await stack.api<{ status: string }>('GET', `/api/deliberations/${messageId}`);
    expect(stored.body.status).toBe('complete');

    const rows = await stack.stageRows(messageId);
    expect(rows.map((r) => `${r.stage_type}:${r.model ?? '-'}`).sort()).toEqual(
      [
        'stage1:sim/fast',
        'stage1:sim/slow1:delay4000@answer',
        'stage1:sim/slow2:delay4000@answer',
        'stage2_label_map:-',
        'stage2:sim/fast',
        'stage2:sim/slow1:delay4000@answer',
        'stage2:sim/slow2:delay4000@answer',
        'stage2_aggregate:-',
        'stage3:sim/fast',
      ].sort(),
    );
    // the fast answer stored before the crash was reused, not asked for again; the two slow calls
    // that died with the worker are counted (usage-only rows), as the provider bills them
    const calls: { stage: string; n: number }[] = await stack.db.query(
      `SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage <> 'unstored'
       GROUP BY stage ORDER BY stage`,
      [messageId],
    );
    expect(calls).toEqual([
      { stage: 'stage1', n: 3 },
      { stage: 'stage2', n: 3 },
      { stage: 'stage3', n: 1 },
      { stage: 'title', n: 1 },
    ]);
    const lost = await lostCalls(stack, messageId);
    expect(lost.models).toEqual(['sim/slow1:delay4000@answer', 'sim/slow2:delay4000@answer']);
    expect(lost.titles).toBeLessThanOrEqual(1);
  }, 90_000);
});

/**
 * The same crash with the default lock and stalled-job settings: the stage is taken over within
 * seconds, and its subscribers are told (`resumed`) instead of hearing nothing meanwhile.
 */
describe('crash recovery with the default settings', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  it('another worker resumes the stage within seconds and subscribers get `resumed`', async () => {
    const first = await stack.spawnWorker();
    const { messageId } = await stack.deliberate({
      question: 'Resume after a crash',
      councilModels: ['sim/slow1:delay9000@answer', 'sim/slow2:delay9000@answer', 'sim/fast'],
      chairmanModel: 'sim/fast',
    });
    const socket = await stack.connect();
    const events: { event: DeliveredEvent; receivedAt: number }[] = [];
    let fastAnswered: () => void = () => undefined;
    const fastDone = new Promise<void>((resolve) => (fastAnswered = resolve));
    const finished = new Promise<void>((resolve) => {
      socket.onAny((name: string, event: DeliveredEvent) => {
        events.push({ event, receivedAt: Date.now() });
        if (
          event.type === 'model_progress' &&
          event.participant === 'sim/fast' &&
          event.state === 'succeeded'
        ) {
          fastAnswered();
        }
        if (name === 'complete' || name === 'error') resolve();
      });
    });
    expect(await socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });
    await fastDone; // the slow calls are in flight for 9 s more
    await leased(stack, messageId, 2);
    // The worker that takes over is up before the crash, as in a fleet.
    await stack.spawnWorker();
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const killedAt = Date.now();
    const before = events.length;

    await finished;
    const after = events.slice(before).map((e) => e.event);
    // The first thing said after the crash is that the stage is being resumed, and why.
    expect(after[0]).toMatchObject({ type: 'resumed', stage: 'stage1', reason: 'worker_lost' });
    expect(String(after[0].message)).toMatch(/resum/i);
    const resumedAfterMs = events[before].receivedAt - killedAt;
    // Generous on a loaded machine; the benchmark gives the real figure (about 5–8 s).
    expect(resumedAfterMs).toBeLessThan(20_000);

    const all = events.map((e) => e.event);
    expectContiguous(all);
    expect(all.filter((e) => e.type === 'resumed')).toHaveLength(1);
    // The mode's own sequence is unchanged around the extension event.
    expect(modeEvents(all).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const stored = await stack.api<{ status: string }>('GET', `/api/deliberations/${messageId}`);
    expect(stored.body.status).toBe('complete');
    const calls: { stage: string; n: number }[] = await stack.db.query(
      `SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage <> 'unstored'
       GROUP BY stage ORDER BY stage`,
      [messageId],
    );
    expect(calls).toEqual([
      { stage: 'stage1', n: 3 },
      { stage: 'stage2', n: 3 },
      { stage: 'stage3', n: 1 },
      { stage: 'title', n: 1 },
    ]);
    const lost = await lostCalls(stack, messageId);
    expect(lost.models).toEqual(['sim/slow1:delay9000@answer', 'sim/slow2:delay9000@answer']);
    expect(lost.titles).toBeLessThanOrEqual(1);
  }, 120_000);
});

const PROMPT_TOKENS = 100;
const COMPLETION_TOKENS = 20;
const COST_USD = 0.0015;

/**
 * The models sit behind a local chat-completions server that counts the requests it gets. The
 * worker is killed while two council answers are on their way: the provider received (and bills)
 * those calls, the stage that resumes elsewhere makes them again, and Conclave counts both.
 */
describe("a worker SIGKILLed mid-stage: the provider's count of calls is Conclave's", () => {
  let server: ChatCompletionsServer;
  let stack: TestStack;

  beforeAll(async () => {
    server = await startChatCompletionsServer(({ request }) => {
      const messages = request.messages as { role: string; content: string }[];
      const prompt = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      const answer = (content: string, delayMs = 0) => ({
        kind: 'success' as const,
        content,
        delayMs,
        promptTokens: PROMPT_TOKENS,
        completionTokens: COMPLETION_TOKENS,
        cost: COST_USD,
      });
      if (prompt.includes(RANKING_PROMPT_MARKER))
        return answer('Thoughts.\n\nFINAL RANKING:\n1. Response B\n2. Response A\n3. Response C');
      if (prompt.includes(SYNTHESIS_PROMPT_MARKER)) return answer('The synthesis.');
      if (prompt.startsWith('Generate a brief title')) return answer('"Crash Title"');
      // The first two council members take their time (on the killed worker and on the next).
      return answer(`answer of ${request.model ?? ''}`, request.model?.endsWith('c') ? 0 : 5000);
    });
    stack = new TestStack({
      WORKER_LOCK_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: 'k',
    });
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await server?.close();
  });

  it('counts the calls that died with the worker, with unknown cost, and usage still adds up', async () => {
    const first = await stack.spawnWorker();
    const { messageId } = await stack.deliberate({
      question: 'Count the calls a crash loses',
      councilModels: ['local/a', 'local/b', 'local/c'],
      chairmanModel: 'local/c',
    });
    const following = stack.follow(messageId, { timeoutMs: 90_000 });
    // Both slow answers in flight, and listed by the worker's heartbeat: then the worker dies.
    await until(
      () => server.requests.filter((r) => !r.model?.endsWith('c') && r.outcome === undefined).length >= 2,
      'the slow calls to be in flight',
      30_000,
    );
    await leased(stack, messageId, 2);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    await stack.spawnWorker();

    const events = await following;
    expect(events.at(-1)?.type).toBe('complete');
    await until(
      () => server.requests.every((r) => r.outcome !== undefined),
      'every request to settle',
      30_000,
    );
    const made = server.requests.length;
    const answered = server.requests.filter((r) => r.outcome === 'answered').length;
    // The two calls lost with the worker were made again.
    expect(made - answered).toBe(2);

    const rows: { stage: string; n: number; cost: number | null }[] = await stack.db.query(
      `SELECT stage, COUNT(*)::int AS n, SUM(cost_usd)::float8 AS cost FROM model_calls
       WHERE message_id = $1 GROUP BY stage ORDER BY stage`,
      [messageId],
    );
    expect(rows.reduce((n, r) => n + r.n, 0)).toBe(made);
    // The lost calls' cost is unknown (the provider's reply never arrived): counted, not priced.
    expect(rows.find((r) => r.stage === 'unstored')).toEqual({ stage: 'unstored', n: 2, cost: null });

    const view = await stack.api<{ status: string; usage: Usage }>('GET', `/api/deliberations/${messageId}`);
    expect(view.body.status).toBe('complete');
    expect(view.body.usage.promptTokens).toBe(answered * PROMPT_TOKENS);
    expect(view.body.usage.completionTokens).toBe(answered * COMPLETION_TOKENS);
    expect(view.body.usage.costUsd).toBeCloseTo(answered * COST_USD, 6);
  }, 120_000);
});

import { randomBytes } from 'node:crypto';
import { loadConfig } from '@conclave/config';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import type { ModelProvider } from '@conclave/llm';
import IORedis, { type Redis } from 'ioredis';
import { buildProvider } from '../apps/worker/src/worker';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';

const MAX_CONCURRENT = 2;

function lastUserContent(messages: unknown[]): string {
  const user = [...(messages as { role: string; content: string }[])]
    .reverse()
    .find((m) => m.role === 'user');
  return user?.content ?? '';
}

/**
 * Two worker processes (each with WORKER_CONCURRENCY=2, so up to a dozen calls could be in flight)
 * call one OpenAI-compatible server through the real HTTP path, sharing PROVIDER_LIMITS via Redis.
 */
describe('provider limits enforced across two worker processes', () => {
  let server: ChatCompletionsServer;
  let stack: TestStack;
  let pending = 0;
  let maxPending = 0;
  let rateLimitNext = false;
  let rateLimited: RecordedChatRequest | undefined;

  function script({ request }: ScriptContext): ChatBehaviour {
    pending++;
    maxPending = Math.max(maxPending, pending);
    void request.settled.then(() => pending--);
    if (rateLimitNext) {
      rateLimitNext = false;
      rateLimited = request;
      return { kind: 'rate-limit', retryAfterSeconds: 1 };
    }
    const prompt = lastUserContent(request.messages);
    const content = prompt.includes(RANKING_PROMPT_MARKER)
      ? 'Thoughts.\n\nFINAL RANKING:\n1. Response B\n2. Response A'
      : prompt.includes(SYNTHESIS_PROMPT_MARKER)
        ? 'The synthesis.'
        : prompt.startsWith('Generate a brief title')
          ? '"A Title"'
          : `answer of ${request.model ?? '?'}`;
    return { kind: 'success', content, delayMs: 80 };
  }

  const council = (question: string) =>
    stack.run({
      question,
      councilModels: ['local/alpha', 'local/beta', 'local/gamma'],
      chairmanModel: 'local/chair',
    });

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    stack = new TestStack({
      OPENAI_BASE_URL: server.baseURL,
      PROVIDER_LIMITS: JSON.stringify({
        'openai-compatible': { maxConcurrent: MAX_CONCURRENT, rpm: 10_000 },
      }),
      WORKER_CONCURRENCY: '2',
    });
    await stack.start({ worker: false });
    // Each worker its own API key, so the server can tell who called.
    await Promise.all([
      stack.spawnWorker({ OPENAI_API_KEY: 'worker-a' }),
      stack.spawnWorker({ OPENAI_API_KEY: 'worker-b' }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await server?.close();
  });

  it('never has more calls pending at the server than maxConcurrent, whichever worker makes them', async () => {
    const runs = await Promise.all([council('One?'), council('Two?'), council('Three?')]);
    for (const run of runs) expect(run.events.at(-1)?.type).toBe('complete');
    // 3 × (3 answers + 3 rankings + 1 synthesis + 1 title)
    expect(server.requests).toHaveLength(24);
    expect(maxPending).toBe(MAX_CONCURRENT);
    const callers = new Set(server.requests.map((r) => r.headers.authorization));
    expect(callers).toEqual(new Set(['Bearer worker-a', 'Bearer worker-b']));
  }, 30_000);

  it('after one 429 with Retry-After: 1, no request from either worker reaches the server for a second', async () => {
    const before = server.requests.length;
    maxPending = 0;
    rateLimitNext = true;
    const runs = await Promise.all([council('Four?'), council('Five?')]);
    for (const run of runs) expect(run.events.at(-1)?.type).toBe('complete');
    expect(maxPending).toBeLessThanOrEqual(MAX_CONCURRENT);

    expect(rateLimited).toBeDefined();
    const at = rateLimited!.receivedAt;
    const later = server.requests.slice(before).filter((r) => r !== rateLimited && r.receivedAt >= at);
    // Only a call admitted just before the cool-down was recorded may still arrive right after the 429.
    const during = later.filter((r) => r.receivedAt > at + 50 && r.receivedAt < at + 950);
    expect(during.map((r) => r.receivedAt - at)).toEqual([]);
    expect(later.filter((r) => r.receivedAt <= at + 50).length).toBeLessThanOrEqual(MAX_CONCURRENT - 1);
    expect(later.some((r) => r.receivedAt >= at + 950)).toBe(true);
    // 2 × 8 calls, plus the retry of the one that was refused.
    expect(server.requests.length - before).toBe(17);
  }, 30_000);
});

describe('the worker provider chain (buildProvider)', () => {
  const call = (provider: ModelProvider, model: string) =>
    provider.complete({
      model,
      messages: [{ role: 'user', content: 'Hello?' }],
      signal: AbortSignal.timeout(10_000),
    });

  it('has no limiter without PROVIDER_LIMITS: a call never touches Redis', async () => {
    const untouchable = new Proxy(
      {},
      {
        get: () => {
          throw new Error('Redis was used');
        },
      },
    ) as Redis;
    const provider = buildProvider(loadConfig({ SIM_LATENCY_MS: '0' }), { realProvider: null }, untouchable);
    await expect(call(provider, 'sim/athena')).resolves.toMatchObject({ simulated: true });
  });

  it('limits the simulator too when PROVIDER_LIMITS names it', async () => {
    const prefix = `t-chain-${randomBytes(5).toString('hex')}`;
    const redis = new IORedis('redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
    try {
      const config = loadConfig({
        REDIS_PREFIX: prefix,
        SIM_LATENCY_MS: '60',
        PROVIDER_LIMITS: '{"simulated":{"maxConcurrent":1}}',
      });
      const provider = buildProvider(config, { realProvider: null }, redis);
      const started = Date.now();
      // Each answer takes 30–90 ms: one at a time, six need at least 180 ms; side by side, under 100.
      await Promise.all(Array.from({ length: 6 }, (_, i) => call(provider, `sim/panelist${i}`)));
      expect(Date.now() - started).toBeGreaterThanOrEqual(170);
    } finally {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    }
  });
});

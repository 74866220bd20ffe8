import type { CouncilResult, DeliberationView } from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider, RetryingProvider } from '@conclave/llm';
import { migrate } from '@conclave/persistence';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { PrivatePostgres } from './support/private-postgres';
import { TestStack } from './support/harness';
import { sleep, until } from './support/wait';

/** Every answer takes this long: the outage starts while the first stage's calls are in flight. */
const ANSWER_MS = 6000;
const OUTAGE_MS = 8000;
const PROMPT_TOKENS = 100;
const COMPLETION_TOKENS = 20;
const COST_USD = 0.0015;

function lastUserContent(messages: unknown[]): string {
  const user = [...(messages as { role: string; content: string }[])]
    .reverse()
    .find((m) => m.role === 'user');
  return user?.content ?? '';
}

function script({ request }: ScriptContext): ChatBehaviour {
  const prompt = lastUserContent(request.messages);
  const content = prompt.includes(RANKING_PROMPT_MARKER)
    ? 'Thoughts.\n\nFINAL RANKING:\n1. Response B\n2. Response A\n3. Response C'
    : prompt.includes(SYNTHESIS_PROMPT_MARKER)
      ? 'The synthesis.'
      : prompt.startsWith('Generate a brief title')
        ? '"Outage Title"'
        : `answer of ${request.model ?? ''}`;
  return {
    kind: 'success',
    content,
    delayMs: ANSWER_MS,
    promptTokens: PROMPT_TOKENS,
    completionTokens: COMPLETION_TOKENS,
    cost: COST_USD,
  };
}

/**
 * The provider is a local chat-completions server that counts the requests it gets; PostgreSQL is
 * a private cluster of this test's own, stopped while the first stages' answers are on their way.
 * Whatever the worker does with them, the provider's count of calls is what Conclave stores and
 * counts in usage and cost.
 */
describe.each<{ name: string; env: Record<string, string>; calls: (n: number) => void }>([
  {
    // The answers are kept and stored once PostgreSQL is back: each call is made once.
    name: 'kept through the outage',
    env: {},
    calls: (n: number) => expect(n).toBe(16),
  },
  {
    // The stage gives up on storage after half a second: its job runs again and calls again, and
    // the calls whose answers it could not store are still counted.
    name: 'given up on (STORE_HOLD_MS=500)',
    env: { STORE_HOLD_MS: '500' },
    calls: (n: number) => expect(n).toBeGreaterThan(16),
  },
])('PostgreSQL goes away while model answers are on their way: $name', ({ env, calls }) => {
  let pg: PrivatePostgres | undefined;
  let stack: TestStack;
  let server: ChatCompletionsServer;

  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    const cluster = pg;
    server = await startChatCompletionsServer(script);
    stack = new TestStack((id) => ({
      DATABASE_URL: cluster.url(`conclave_t_${id}`),
      // The worker's provider is the local server (injected below); the gateway accepts its models.
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_IDLE_MS: '3000',
      ...env,
    }));
    await migrate(stack.config.databaseUrl);
    await stack.start({
      realProvider: new RetryingProvider(
        new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'k' }),
        {
          policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 1000 },
        },
      ),
    });
  }, 90_000);

  afterAll(async () => {
    try {
      await stack?.stop().catch(() => undefined);
      await server?.close();
    } finally {
      await pg?.destroy();
    }
  }, 60_000);

  it("stores and counts every call the provider answered, and the provider's count of calls is Conclave's", async () => {
    const socket = await stack.connect();
    const bodies = ['first', 'second'].map((name) => ({
      question: `Outage calls, ${name}: what makes a good API?`,
      councilModels: ['local/a', 'local/b', 'local/c'],
      chairmanModel: 'local/c',
    }));
    const accepted = await Promise.all(bodies.map((body) => stack.deliberate(body)));
    const following = accepted.map(({ messageId }) => stack.follow(messageId, { socket, timeoutMs: 90_000 }));

    // Both first stages in flight (three answers and a title each): then PostgreSQL goes away,
    // and comes back once those answers have arrived.
    await until(() => server.requests.length >= 8, 'the first stages to call', 30_000);
    const cluster = pg as PrivatePostgres;
    await cluster.stop();
    const stopped = Date.now();
    expect(server.requests.filter((r) => r.outcome !== undefined)).toEqual([]);
    await until(() => server.requests.every((r) => r.outcome !== undefined), 'the answers to arrive', 30_000);
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - stopped)));
    await cluster.start();

    const received = await Promise.all(following);
    received.forEach((events) => expect(events.at(-1)?.type).toBe('complete'));
    await until(
      () => server.requests.every((r) => r.outcome !== undefined),
      'every request to settle',
      30_000,
    );
    const made = server.requests.length;
    const answered = server.requests.filter((r) => r.outcome === 'answered').length;
    calls(made);

    const ids = accepted.map((a) => a.messageId);
    const count = async () => {
      const [row]: { all: number; outcomes: number }[] = await stack.db.query(
        `SELECT count(*)::int AS all, count(*) FILTER (WHERE stage <> 'unstored')::int AS outcomes
         FROM model_calls WHERE message_id = ANY($1)`,
        [ids],
      );
      return row;
    };
    // Every call made has its row (the usage of one whose answer could not be stored follows
    // within a second or so of PostgreSQL's return); per council one outcome per call: 3 answers,
    // a title, 3 rankings and a synthesis.
    await until(async () => (await count()).all >= made, 'every call to be recorded', 30_000);
    expect(await count()).toEqual({ all: made, outcomes: 16 });

    let promptTokens = 0;
    let completionTokens = 0;
    let costUsd = 0;
    for (const id of ids) {
      const view = await stack.api<DeliberationView<CouncilResult>>('GET', `/api/deliberations/${id}`);
      promptTokens += view.body.usage.promptTokens;
      completionTokens += view.body.usage.completionTokens;
      costUsd += view.body.usage.costUsd;
    }
    expect({ promptTokens, completionTokens }).toEqual({
      promptTokens: answered * PROMPT_TOKENS,
      completionTokens: answered * COMPLETION_TOKENS,
    });
    expect(costUsd).toBeCloseTo(answered * COST_USD, 6);
  }, 150_000);
});

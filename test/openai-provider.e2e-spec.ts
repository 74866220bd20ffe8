import { Writable } from 'node:stream';
import type { CouncilResult, DeliberationView, DeliveredEvent } from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider, RetryingProvider, providerFromEnv } from '@conclave/llm';
import { createLogger } from '@conclave/observability';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { startWorker } from '../apps/worker/src/worker';
import { TestStack } from './support/harness';
import { freePort } from './support/private-postgres';

function lastUserContent(messages: unknown[]): string {
  const user = [...(messages as { role: string; content: string }[])]
    .reverse()
    .find((m) => m.role === 'user');
  return user?.content ?? '';
}

function script({ request, modelCallIndex }: ScriptContext): ChatBehaviour {
  const model = request.model ?? '';
  if (model === 'local/limited' && modelCallIndex === 0) return { kind: 'rate-limit', retryAfterSeconds: 1 };
  if (model === 'local/broken') return { kind: 'http-error', status: 500 };
  if (model === 'local/refused') return { kind: 'http-error', status: 400, message: 'bad model' };
  if (model === 'local/nul') return { kind: 'success', content: 'zero\u0000byte answer' };
  if (model === 'local/cut' && !lastUserContent(request.messages).startsWith('Generate a brief title')) {
    return { kind: 'success', content: 'an answer cut at the tok', finishReason: 'length', chunks: 4 };
  }
  const prompt = lastUserContent(request.messages);
  const content = prompt.includes(RANKING_PROMPT_MARKER)
    ? 'Thoughts.\n\nFINAL RANKING:\n1. Response B\n2. Response A'
    : prompt.includes(SYNTHESIS_PROMPT_MARKER)
      ? 'The synthesis.'
      : prompt.startsWith('Generate a brief title')
        ? '"Local Title."'
        : `answer of ${model} to: ${prompt.slice(0, 40)}`;
  return {
    kind: 'success',
    content,
    promptTokens: 100,
    completionTokens: 20,
    cost: 0.0015,
    servedModel: `${model}-2026`,
  };
}

describe('the OpenAI-compatible provider inside a real deliberation', () => {
  let server: ChatCompletionsServer;
  const stack = new TestStack({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    const provider = new RetryingProvider(
      new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'test-key' }),
      {
        policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 5000 },
      },
    );
    await stack.start({ realProvider: provider });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  const view = async (messageId: string) =>
    (await stack.api<DeliberationView<CouncilResult>>('GET', `/api/deliberations/${messageId}`)).body;

  it('records usage and cost, honours Retry-After on a 429, and is not labelled simulated', async () => {
    const { messageId, events } = await stack.run({
      question: 'Local models?',
      councilModels: ['local/alpha', 'local/limited'],
      chairmanModel: 'local/chair',
    });
    expect(events.at(-1)?.type).toBe('complete');
    const retrying = events.find((e) => e.type === 'model_progress' && e.state === 'retrying');
    expect(retrying).toMatchObject({ stage: 'stage1', participant: 'local/limited' });
    const limited = server.requests.filter((r) => r.model === 'local/limited');
    expect(limited[1].receivedAt - limited[0].receivedAt).toBeGreaterThanOrEqual(950);

    const rows = await stack.stageRows(messageId);
    const answer = rows.find((r) => r.stage_type === 'stage1' && r.model === 'local/alpha');
    expect(answer).toMatchObject({ prompt_tokens: 100, completion_tokens: 20 });
    expect(Number(answer?.cost_usd)).toBeCloseTo(0.0015);

    const result = await view(messageId);
    expect(result.simulated).toBe(false);
    // 2 answers + 2 rankings + 1 synthesis + 1 title, each 100/20 tokens and $0.0015
    expect(result.usage.promptTokens).toBe(600);
    expect(result.usage.completionTokens).toBe(120);
    expect(result.usage.costUsd).toBeCloseTo(0.009);
    expect(result.result.stage3?.response).toBe('The synthesis.');
    expect(result.result.title).toBe('Local Title');
    expect(result.result.stage2Metadata?.aggregateRankings.map((a) => a.model)).toEqual([
      'local/limited',
      'local/alpha',
    ]);
  });

  it('retries a 500 up to the limit, never retries a 400, and carries on with the others', async () => {
    const before = server.requests.length;
    const { events } = await stack.run({
      question: 'Errors',
      councilModels: ['local/alpha', 'local/beta', 'local/broken', 'local/refused'],
      chairmanModel: 'local/chair',
    });
    expect(events.at(-1)?.type).toBe('complete');
    const stage1 = server.requests
      .slice(before)
      .filter((r) => !lastUserContent(r.messages).includes(RANKING_PROMPT_MARKER));
    expect(stage1.filter((r) => r.model === 'local/broken')).toHaveLength(3);
    expect(stage1.filter((r) => r.model === 'local/refused')).toHaveLength(1);
    const failures = events.filter(
      (e) => e.type === 'model_progress' && e.state === 'failed' && e.stage === 'stage1',
    );
    expect(failures.map((e) => e.participant).sort()).toEqual(['local/broken', 'local/refused']);
    expect(String(failures.find((e) => e.participant === 'local/broken')?.error)).toMatch(/500/);
    expect(JSON.stringify(events)).not.toContain('test-key');
  });

  it('stores an answer that contains a NUL character without it', async () => {
    const { messageId, events } = await stack.run({
      question: 'NUL',
      councilModels: ['local/alpha', 'local/nul'],
      chairmanModel: 'local/chair',
    });
    expect(events.at(-1)?.type).toBe('complete');
    const rows = await stack.stageRows(messageId);
    expect(rows.find((r) => r.model === 'local/nul' && r.stage_type === 'stage1')?.content).toBe(
      'zerobyte answer',
    );
  });

  it('records an answer cut at the length limit (finish_reason: length) and shows it as truncated', async () => {
    const { messageId, events } = await stack.run({
      question: 'Long answer please',
      councilModels: ['local/alpha', 'local/cut'],
      chairmanModel: 'local/chair',
    });
    expect(events.at(-1)?.type).toBe('complete');
    const landed = events.filter(
      (e) => e.type === 'model_progress' && e.state === 'succeeded' && e.stage === 'stage1',
    );
    expect(landed.find((e) => e.participant === 'local/cut')).toMatchObject({
      content: 'an answer cut at the tok',
      truncated: true,
    });
    expect(landed.find((e) => e.participant === 'local/alpha')).not.toHaveProperty('truncated');
    const { body: view } = await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`);
    const cut = view.calls.filter((c) => c.model === 'local/cut');
    expect(cut.map((c) => [c.stage, c.finishReason, c.truncated])).toEqual([
      ['stage1', 'length', true],
      ['stage2', 'length', true],
    ]);
    expect(view.calls.find((c) => c.model === 'local/alpha' && c.stage === 'stage1')).toMatchObject({
      finishReason: 'stop',
      truncated: false,
    });
  });

  it('gives Stage 1 and Stage 3 the last 10 turns of history, and Stage 2 none', async () => {
    let conversationId: string | undefined;
    for (let turn = 1; turn <= 12; turn++) {
      const run = await stack.run({
        question: `Question ${turn}`,
        councilModels: ['local/alpha', 'local/beta'],
        chairmanModel: 'local/chair',
        ...(conversationId ? { conversationId } : {}),
      });
      expect(run.events.at(-1)?.type).toBe('complete');
      conversationId = run.conversationId;
    }
    const lastTurn = server.requests.filter((r) =>
      (r.messages as { content: string }[]).some((m) => m.content.includes('Question 12')),
    );
    const stage1 = lastTurn.find(
      (r) => r.model === 'local/alpha' && lastUserContent(r.messages) === 'Question 12',
    );
    const messages = stage1?.messages as { role: string; content: string }[];
    expect(messages).toHaveLength(10 * 2 + 1);
    expect(messages[0]).toEqual({ role: 'user', content: 'Question 2' });
    expect(messages[1]).toEqual({ role: 'assistant', content: 'The synthesis.' });
    expect(messages[19]).toEqual({ role: 'assistant', content: 'The synthesis.' });
    const synthesis = lastTurn.find((r) => lastUserContent(r.messages).includes(SYNTHESIS_PROMPT_MARKER));
    expect(synthesis?.messages).toHaveLength(21);
    const ranking = lastTurn.find((r) => lastUserContent(r.messages).includes(RANKING_PROMPT_MARKER));
    expect(ranking?.messages).toHaveLength(1);
  }, 60_000);
});

/**
 * An OpenAI-compatible server reached through a URL with credentials (a reverse proxy with Basic
 * authentication, an internal host): users learn which provider failed and how, never its URL,
 * host, port, path or password; operators find the detail in the logs, with the password redacted.
 */
describe('a provider URL with credentials never reaches users', () => {
  const PASSWORD = 'secretpass';
  const withCredentials = (baseURL: string) => {
    const url = new URL(baseURL);
    url.username = 'user';
    url.password = PASSWORD;
    return url.toString();
  };
  let server: ChatCompletionsServer;
  let stack: TestStack;
  let serverURL: string;
  let closedURL: string;
  let closedPort: number;
  let logs = '';

  /** Answers echoing the URL, host, port, path and password back, as misconfigured proxies do. */
  function leakyScript({ request }: ScriptContext): ChatBehaviour {
    const model = request.model ?? '';
    const leak = `${serverURL}/chat/completions (user:${PASSWORD} at ${new URL(serverURL).host})`;
    if (model === 'echo-500') return { kind: 'http-error', status: 500, message: `upstream ${leak} refused` };
    if (model === 'echo-401') return { kind: 'http-error', status: 401, message: `no access for ${leak}` };
    if (model === 'echo-body') return { kind: 'error-body', code: 502, message: `gateway ${leak} failed` };
    if (model === 'echo-html') {
      return {
        kind: 'raw',
        status: 200,
        headers: { 'content-type': 'text/html' },
        body: `<h1>Proxy Error</h1><p>${leak}</p><address>Apache Server at 127.0.0.1 Port ${new URL(serverURL).port}</address>`,
      };
    }
    const prompt = lastUserContent(request.messages);
    const content = prompt.includes(RANKING_PROMPT_MARKER)
      ? 'FINAL RANKING:\n1. Response A\n2. Response B'
      : prompt.includes(SYNTHESIS_PROMPT_MARKER)
        ? 'The synthesis.'
        : prompt.startsWith('Generate a brief title')
          ? 'Title'
          : `answer of ${model}`;
    return { kind: 'success', content };
  }

  beforeAll(async () => {
    server = await startChatCompletionsServer(leakyScript);
    serverURL = withCredentials(server.baseURL);
    closedPort = await freePort();
    closedURL = withCredentials(`http://127.0.0.1:${closedPort}/v1`);
    stack = new TestStack({ OPENAI_BASE_URL: serverURL });
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  /** Runs a deliberation on a worker whose provider comes from OPENAI_BASE_URL, its log kept. */
  async function runOn(baseURL: string, body: unknown) {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    });
    const worker = await startWorker(stack.config, {
      logger: createLogger('info', 'worker', sink),
      realProvider: providerFromEnv({
        OPENAI_BASE_URL: baseURL,
        LLM_MAX_ATTEMPTS: '2',
        LLM_RETRY_BASE_MS: '10',
      }),
    });
    try {
      return await stack.run(body);
    } finally {
      await worker.close();
    }
  }

  /** Everything a user (or the database behind them) holds about a deliberation. */
  async function seenByUsers(messageId: string, conversationId: string, events: DeliveredEvent[]) {
    const views = await Promise.all(
      [
        `/api/deliberations/${messageId}`,
        `/api/deliberations/${messageId}/events`,
        `/api/conversations/${conversationId}`,
      ].map(async (url) => (await stack.api('GET', url)).body),
    );
    const tables: Record<string, unknown[]> = {};
    for (const table of ['messages', 'model_calls', 'deliberation_stages', 'deliberation_events']) {
      tables[table] = await stack.db.query(`SELECT * FROM ${table}`);
    }
    return { views, events, tables };
  }

  function expectNothingOfTheProvider(seen: unknown): void {
    // Ids are random hex: a port's digits may turn up in one by chance.
    const text = JSON.stringify(seen).replace(
      /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
      '<id>',
    );
    const forbidden = [PASSWORD, '127.0.0.1', new URL(serverURL).port, String(closedPort), '/v1', 'user:'];
    for (const secret of forbidden)
      expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false });
  }

  const failures = (events: DeliveredEvent[]) =>
    Object.fromEntries(
      events
        .filter((e) => e.type === 'model_progress' && e.state === 'failed' && e.stage === 'stage1')
        .map((e) => [e.participant, e.error]),
    );

  it('(a) a closed port: the error names the provider and "connection refused", nothing else', async () => {
    const { messageId, conversationId, events } = await runOn(closedURL, {
      question: 'Anyone there?',
      councilModels: ['local/a', 'local/b'],
      chairmanModel: 'local/c',
    });
    const last = events.at(-1)!;
    expect(last.type).toBe('error');
    expect(failures(events)).toEqual({
      'local/a': 'Network error calling the openai-compatible provider: connection refused (ECONNREFUSED)',
      'local/b': 'Network error calling the openai-compatible provider: connection refused (ECONNREFUSED)',
    });
    const retrying = events.filter((e) => e.type === 'model_progress' && e.state === 'retrying');
    expect(retrying.length).toBeGreaterThan(0);
    expect(String(last.message)).toMatch(/^All council models failed to answer.*connection refused/);
    const view = (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body;
    expect(view).toMatchObject({ status: 'failed', error: last.message });
    expectNothingOfTheProvider(await seenByUsers(messageId, conversationId, events));
    // The operator's log has the detail, without the password.
    expect(logs).toContain('ECONNREFUSED');
    expect(logs).toContain(`127.0.0.1:${closedPort}`);
    expect(logs).not.toContain(PASSWORD);
  }, 60_000);

  it('(b) a server answering errors that echo its URL: users see status and kind only', async () => {
    const expectedAuth = `Basic ${Buffer.from(`user:${PASSWORD}`).toString('base64')}`;
    const partial = await runOn(serverURL, {
      question: 'Which answers survive?',
      councilModels: ['local/ok-1', 'local/echo-500', 'local/echo-body', 'local/echo-html', 'local/ok-2'],
      chairmanModel: 'local/ok-chair',
    });
    expect(partial.events.at(-1)?.type).toBe('complete');
    expect(failures(partial.events)).toEqual({
      'local/echo-500': 'HTTP 500 from the openai-compatible provider',
      'local/echo-body': 'Error in response body from the openai-compatible provider (code 502)',
      'local/echo-html': 'Invalid response from the openai-compatible provider: body is not a JSON object',
    });
    expect((await stack.stageRows(partial.messageId)).length).toBeGreaterThan(0);
    // The credentials were used, as Basic authentication: the calls reached the server.
    expect(server.requests.length).toBeGreaterThan(0);
    expect(new Set(server.requests.map((r) => r.headers.authorization))).toEqual(new Set([expectedAuth]));

    const failed = await runOn(serverURL, {
      question: 'And when nobody answers?',
      councilModels: ['local/echo-500', 'local/echo-401'],
      chairmanModel: 'local/ok-chair',
    });
    const last = failed.events.at(-1)!;
    expect(last.type).toBe('error');
    expect(last.message).toBe(
      'All council models failed to answer: local/echo-500 (HTTP 500 from the openai-compatible provider), ' +
        'local/echo-401 (HTTP 401 from the openai-compatible provider).',
    );

    expectNothingOfTheProvider([
      await seenByUsers(partial.messageId, partial.conversationId, partial.events),
      await seenByUsers(failed.messageId, failed.conversationId, failed.events),
    ]);
    expect(logs).toContain('HTTP 500');
    expect(logs).toContain('upstream');
    expect(logs).not.toContain(PASSWORD);
  }, 60_000);
});

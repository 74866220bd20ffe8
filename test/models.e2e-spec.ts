import type { ModelsResponse } from '@conclave/contracts';
import {
  startChatCompletionsServer,
  type ChatCompletionsServer,
} from '../libs/llm/src/testing/chat-completions-server';
import {
  SAMPLE_OPENROUTER_MODELS,
  startOpenRouterModelsServer,
  type OpenRouterModelsServer,
} from '../libs/llm/src/testing/openrouter-models-server';
import { TestStack } from './support/harness';
import { sleep, until } from './support/wait';

const KEY = 'sk-or-v1-e2e-secret-abcdef0123';
/** Long enough for two requests to fall inside it, short enough to wait out. */
const REFRESH_MS = 2000;

const ids = (body: ModelsResponse, provider: string) =>
  body.models.filter((m) => m.provider === provider).map((m) => m.id);
const source = (body: ModelsResponse, provider: string) => body.sources.find((s) => s.provider === provider)!;

describe('GET /api/models with nothing configured', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey' });
  let token = '';
  beforeAll(async () => {
    await stack.start({ worker: false });
    token = await stack.createUser('picker');
  }, 60_000);
  afterAll(() => stack.stop());

  it('needs a key, like the other /api routes', async () => {
    expect((await stack.api('GET', '/api/models')).status).toBe(401);
    expect((await stack.api('GET', '/api/models', { token: 'ck_wrong' })).status).toBe(401);
  });

  it('offers the simulated panel only, with the directives documented', async () => {
    const { status, body } = await stack.api<ModelsResponse>('GET', '/api/models', { token });
    expect(status).toBe(200);
    expect(body.models.length).toBeGreaterThan(3);
    expect(body.models.every((m) => m.provider === 'simulated' && m.id.startsWith('sim/'))).toBe(true);
    expect(ids(body, 'simulated')).toEqual(
      expect.arrayContaining(['sim/athena', 'sim/hermes', 'sim/apollo', 'sim/chairman']),
    );
    expect(body.sources.map((s) => [s.provider, s.configured])).toEqual([
      ['simulated', true],
      ['openrouter', false],
      ['openai-compatible', false],
    ]);
    expect(source(body, 'simulated').note).toMatch(/every model id/);
    const syntaxes = body.directives.map((d) => d.syntax).join(' ');
    for (const directive of [':fail', ':timeout', ':malformed', ':transient', ':delay<ms>', ':stubborn']) {
      expect(syntaxes).toContain(directive);
    }
    for (const d of body.directives) expect(d.example).toMatch(/^sim\//);
    expect(body.promptKinds).toEqual(expect.arrayContaining(['answer', 'rank', 'synthesis', 'title']));
  });

  it('is in the OpenAPI document', async () => {
    const docs = await stack.api<{ paths: Record<string, unknown> }>('GET', '/api/docs-json');
    expect(Object.keys(docs.body.paths)).toContain('/api/models');
  });
});

describe('GET /api/models with an OpenRouter key', () => {
  let openrouter: OpenRouterModelsServer;
  let stack: TestStack;
  beforeAll(async () => {
    openrouter = await startOpenRouterModelsServer();
    stack = new TestStack({
      OPENROUTER_API_KEY: KEY,
      OPENROUTER_BASE_URL: openrouter.baseURL,
      MODEL_CATALOGUE_REFRESH_MS: String(REFRESH_MS),
      MODEL_CATALOGUE_TIMEOUT_MS: '2000',
    });
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await openrouter.close();
  });

  it('lists OpenRouter’s models with context lengths and prices, fetched once for many requests', async () => {
    const answers = await Promise.all([1, 2, 3].map(() => stack.api<ModelsResponse>('GET', '/api/models')));
    const again = await stack.api<ModelsResponse>('GET', '/api/models');
    expect(openrouter.requests).toHaveLength(1);
    expect(openrouter.requests[0].headers.authorization).toBe(`Bearer ${KEY}`);
    for (const { status, body } of [...answers, again]) {
      expect(status).toBe(200);
      expect(ids(body, 'openrouter')).toEqual(SAMPLE_OPENROUTER_MODELS.map((m) => m.id));
    }
    const { body } = again;
    expect(ids(body, 'simulated')).toContain('sim/athena');
    expect(body.models.find((m) => m.id === 'openai/gpt-4o')).toEqual({
      id: 'openai/gpt-4o',
      provider: 'openrouter',
      name: 'OpenAI: GPT-4o',
      contextLength: 128000,
      pricing: { promptPerMillionUsd: 2.5, completionPerMillionUsd: 10 },
      description: expect.stringContaining('GPT-4o'),
    });
    expect(source(body, 'openrouter')).toMatchObject({
      configured: true,
      count: SAMPLE_OPENROUTER_MODELS.length,
      error: null,
      fetchedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(source(body, 'simulated').note).toBeUndefined();
  });

  it('fetches again once the refresh interval has passed', async () => {
    const before = (await stack.api<ModelsResponse>('GET', '/api/models')).body;
    openrouter.setBehaviour({
      kind: 'list',
      models: [...SAMPLE_OPENROUTER_MODELS, { id: 'new/model', name: 'New', context_length: 4096 }],
    });
    const seen = openrouter.requests.length;
    await sleep(REFRESH_MS + 100);
    await stack.api<ModelsResponse>('GET', '/api/models');
    await until(() => openrouter.requests.length === seen + 1);
    // The request that found the list stale got it at once; the next ones get the new list.
    let after = (await stack.api<ModelsResponse>('GET', '/api/models')).body;
    for (let i = 0; i < 40 && !ids(after, 'openrouter').includes('new/model'); i++) {
      await sleep(25);
      after = (await stack.api<ModelsResponse>('GET', '/api/models')).body;
    }
    expect(ids(after, 'openrouter')).toContain('new/model');
    expect(Date.parse(source(after, 'openrouter').fetchedAt!)).toBeGreaterThan(
      Date.parse(source(before, 'openrouter').fetchedAt!),
    );
    expect(openrouter.requests).toHaveLength(seen + 1);
  });

  it('keeps answering 200 with the last good list when OpenRouter fails, saying so safely', async () => {
    const good = (await stack.api<ModelsResponse>('GET', '/api/models')).body;
    openrouter.setBehaviour({
      kind: 'http-error',
      status: 500,
      message: `upstream broke at ${openrouter.baseURL}`,
    });
    await sleep(REFRESH_MS + 100);
    const seen = openrouter.requests.length;
    await stack.api('GET', '/api/models');
    await until(() => openrouter.requests.length === seen + 1);
    let answer = await stack.api<ModelsResponse>('GET', '/api/models');
    for (let i = 0; i < 40 && source(answer.body, 'openrouter').error === null; i++) {
      await sleep(25);
      answer = await stack.api<ModelsResponse>('GET', '/api/models');
    }
    expect(answer.status).toBe(200);
    expect(source(answer.body, 'openrouter').error).toBe(
      'Could not fetch the OpenRouter model list: HTTP 500',
    );
    expect(ids(answer.body, 'openrouter')).toEqual(ids(good, 'openrouter'));
    expect(source(answer.body, 'openrouter').fetchedAt).toBe(source(good, 'openrouter').fetchedAt);
    expect(ids(answer.body, 'simulated').length).toBeGreaterThan(0);
    const text = JSON.stringify(answer.body);
    expect(text).not.toContain('127.0.0.1');
    expect(text).not.toContain(new URL(openrouter.baseURL).port);
    expect(text).not.toContain(KEY);
  });
});

describe('GET /api/models with an OpenAI-compatible base URL', () => {
  let server: ChatCompletionsServer;
  let stack: TestStack;
  beforeAll(async () => {
    server = await startChatCompletionsServer();
    // The first fetch fails: nothing to fall back on yet.
    server.setModels((index) =>
      index === 0
        ? { kind: 'http-error', status: 503 }
        : {
            kind: 'list',
            models: [
              { id: 'llama3.2', owned_by: 'library' },
              { id: 'qwen2.5:7b', owned_by: 'library' },
            ],
          },
    );
    stack = new TestStack({
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: KEY,
      MODEL_CATALOGUE_REFRESH_MS: String(REFRESH_MS),
      MODEL_CATALOGUE_TIMEOUT_MS: '2000',
    });
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  it('answers 200 with the simulated panel and a user-safe error when the only list cannot be fetched', async () => {
    const { status, body } = await stack.api<ModelsResponse>('GET', '/api/models');
    expect(status).toBe(200);
    expect(ids(body, 'openai-compatible')).toEqual([]);
    expect(ids(body, 'simulated')).toContain('sim/athena');
    expect(source(body, 'openai-compatible')).toEqual({
      provider: 'openai-compatible',
      configured: true,
      fetchedAt: null,
      count: 0,
      error: "Could not fetch the OpenAI-compatible server's model list: HTTP 503",
    });
    expect(source(body, 'openrouter').configured).toBe(false);
    expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|sk-or/);
  });

  it("lists the server's own models under the prefix the provider strips", async () => {
    await sleep(REFRESH_MS + 100);
    const { status, body } = await stack.api<ModelsResponse>('GET', '/api/models');
    expect(status).toBe(200);
    expect(ids(body, 'openai-compatible')).toEqual(['local/llama3.2', 'local/qwen2.5:7b']);
    expect(source(body, 'openai-compatible')).toMatchObject({ error: null, count: 2 });
    expect(server.modelsRequests).toHaveLength(2);
    expect(server.modelsRequests[1].headers.authorization).toBe(`Bearer ${KEY}`);
    await stack.api('GET', '/api/models');
    expect(server.modelsRequests).toHaveLength(2);
  });
});

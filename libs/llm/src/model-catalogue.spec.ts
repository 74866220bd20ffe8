import { createServer } from 'node:net';
import { MODEL_ID_PATTERN, type ModelEntry } from '@conclave/contracts';
import {
  CatalogueFetchError,
  MAX_CATALOGUE_ENTRIES,
  MAX_DESCRIPTION_CHARS,
  ModelCatalogue,
  ModelDirectory,
  OpenAiCompatibleCatalogueSource,
  OpenRouterCatalogueSource,
  parseOpenAiModels,
  parseOpenRouterModels,
  perMillionUsd,
  plainText,
  readJsonBounded,
  userFacingCatalogueError,
  type CatalogueSource,
  type RemoteSource,
} from './model-catalogue';
import { SIM_DIRECTIVES, SIM_PROMPT_KINDS, simulatedPanel } from './simulated-panel';
import { startChatCompletionsServer, type ChatCompletionsServer } from './testing/chat-completions-server';
import {
  SAMPLE_OPENROUTER_MODELS,
  startOpenRouterModelsServer,
  type OpenRouterModelsServer,
} from './testing/openrouter-models-server';

const KEY = 'sk-or-v1-secret-0123456789';

let openrouter: OpenRouterModelsServer;
let local: ChatCompletionsServer;

beforeAll(async () => {
  openrouter = await startOpenRouterModelsServer();
  local = await startChatCompletionsServer();
});
afterAll(async () => {
  await openrouter.close();
  await local.close();
});
beforeEach(() => {
  openrouter.setBehaviour({ kind: 'list', models: [...SAMPLE_OPENROUTER_MODELS] });
  openrouter.requests.length = 0;
  local.setModels({ kind: 'list', models: [{ id: 'llama3.2', owned_by: 'library' }] });
  local.modelsRequests.length = 0;
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A settable clock. */
function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** A source whose fetches a test resolves or rejects by hand. */
function manualSource(provider: RemoteSource = 'openrouter') {
  const calls: {
    signal: AbortSignal;
    resolve: (entries: ModelEntry[]) => void;
    reject: (error: unknown) => void;
  }[] = [];
  const source: CatalogueSource = {
    provider,
    fetch: (signal) =>
      new Promise<ModelEntry[]>((resolve, reject) => {
        calls.push({ signal, resolve, reject });
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      }),
  };
  return { source, calls };
}

const entry = (id: string): ModelEntry => ({ id, provider: 'openrouter', name: id });
const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('parsing OpenRouter and OpenAI-compatible lists', () => {
  it('reads OpenRouter entries with context length and prices per million tokens', () => {
    const entries = parseOpenRouterModels({ data: SAMPLE_OPENROUTER_MODELS });
    expect(entries[0]).toEqual({
      id: 'openai/gpt-4o',
      provider: 'openrouter',
      name: 'OpenAI: GPT-4o',
      contextLength: 128000,
      pricing: { promptPerMillionUsd: 2.5, completionPerMillionUsd: 10 },
      description: 'GPT-4o ("o" for "omni") is OpenAI\'s latest AI model.',
    });
    expect(entries[1].pricing).toEqual({ promptPerMillionUsd: 0.8, completionPerMillionUsd: 4 });
    expect(entries[2].pricing).toEqual({ promptPerMillionUsd: 0, completionPerMillionUsd: 0 });
    // "-1": the price varies (the auto router); no price rather than a wrong one.
    expect(entries[3].id).toBe('openrouter/auto');
    expect(entries[3].pricing).toBeUndefined();
    // Nothing of OpenRouter's other fields is passed on.
    expect(Object.keys(entries[0]).sort()).toEqual([
      'contextLength',
      'description',
      'id',
      'name',
      'pricing',
      'provider',
    ]);
  });

  it('converts per-token price strings exactly', () => {
    expect(perMillionUsd('0.0000025')).toBe(2.5);
    expect(perMillionUsd('0.000000075')).toBe(0.075);
    expect(perMillionUsd('0.00006')).toBe(60);
    expect(perMillionUsd('1.5e-7')).toBe(0.15);
    expect(perMillionUsd(0.000003)).toBe(3);
    expect(perMillionUsd('0')).toBe(0);
    for (const bad of ['-1', '', 'free', 'NaN', 'Infinity', null, undefined, {}, '5']) {
      expect(perMillionUsd(bad)).toBeUndefined();
    }
  });

  it('keeps only ids a roster accepts, each once, and tolerates missing or odd fields', () => {
    const entries = parseOpenRouterModels({
      data: [
        { id: 'ok/one' },
        { id: 'ok/one', name: 'duplicate' },
        { id: 'no-slash' },
        { id: 'bad id/with space' },
        { id: `long/${'x'.repeat(300)}` },
        { id: 42 },
        'a string',
        null,
        [],
        { id: 'ok/two', name: 7, context_length: -5, pricing: { prompt: '0.000001' } },
        { id: 'ok/three', context_length: '8192', pricing: 'cheap', description: '' },
      ],
    });
    expect(entries).toEqual([
      { id: 'ok/one', provider: 'openrouter', name: 'ok/one' },
      { id: 'ok/two', provider: 'openrouter', name: 'ok/two' },
      { id: 'ok/three', provider: 'openrouter', name: 'ok/three', contextLength: 8192 },
    ]);
    for (const e of entries) expect(e.id).toMatch(MODEL_ID_PATTERN);
  });

  it('refuses an answer that is not a model list', () => {
    for (const body of [null, 'text', [], {}, { data: {} }, { models: [] }]) {
      expect(() => parseOpenRouterModels(body)).toThrow(CatalogueFetchError);
      expect(() => parseOpenAiModels(body, 'local')).toThrow(
        expect.objectContaining({ kind: 'invalid-response' }),
      );
    }
  });

  it('reduces names and descriptions to bounded plain text', () => {
    const [one] = parseOpenRouterModels({
      data: [
        {
          id: 'evil/model',
          name: '<img src=x onerror=alert(1)>Evil\u202e\u0000 model',
          description: `<script>alert(1)</script>Line one\n\n<b>bold</b>\u200b ${'word '.repeat(500)}`,
        },
      ],
    });
    expect(one.name).toBe('Evil model');
    const unsafe = (c: string) => c < ' ' || '<>\u200b\u202e'.includes(c);
    expect([...one.name, ...one.description!].filter(unsafe)).toEqual([]);
    expect(one.description!.startsWith('alert(1) Line one bold word')).toBe(true);
    expect(one.description!.length).toBe(MAX_DESCRIPTION_CHARS);
    expect(one.description!.endsWith('…')).toBe(true);
    expect(plainText('<scr<b>ipt>alert(1)</script> costs <$1 & a > b', 100)).toBe('alert(1) costs $1 & a b');
    expect(plainText('😀'.repeat(10), 6)).toBe('😀😀…');
    expect(plainText('   ', 10)).toBeUndefined();
    expect(plainText(12, 10)).toBeUndefined();
  });

  it('bounds the number of entries', () => {
    const data = Array.from({ length: MAX_CATALOGUE_ENTRIES + 500 }, (_, i) => ({ id: `p/m${i}` }));
    const entries = parseOpenRouterModels({ data });
    expect(entries).toHaveLength(MAX_CATALOGUE_ENTRIES);
    expect(entries.at(-1)!.id).toBe(`p/m${MAX_CATALOGUE_ENTRIES - 1}`);
  });

  it('bounds the bytes read, announced or not', async () => {
    const big = JSON.stringify({ data: [{ id: 'a/b', description: 'x'.repeat(2000) }] });
    await expect(
      readJsonBounded(
        new Response(big, { headers: { 'content-length': String(big.length) } }),
        'openrouter',
        1000,
      ),
    ).rejects.toMatchObject({ kind: 'too-large' });
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(200)));
        controller.close();
      },
    });
    await expect(readJsonBounded(new Response(stream), 'openrouter', 1000)).rejects.toMatchObject({
      kind: 'too-large',
    });
    await expect(readJsonBounded(new Response('{"data":[]}'), 'openrouter', 1000)).resolves.toEqual({
      data: [],
    });
    await expect(readJsonBounded(new Response('<html>'), 'openrouter')).rejects.toMatchObject({
      kind: 'invalid-response',
    });
  });

  it('names OpenAI-compatible entries <prefix>/<server id>, the id the provider strips again', () => {
    const entries = parseOpenAiModels(
      {
        object: 'list',
        data: [
          { id: 'llama3.2', object: 'model', owned_by: 'library' },
          { id: 'meta-llama/Llama-3.1-8B-Instruct', owned_by: 'vllm' },
          { id: 'qwen2.5:7b' },
          { id: 'has space' },
          { id: '' },
        ],
      },
      'local',
    );
    expect(entries).toEqual([
      {
        id: 'local/llama3.2',
        provider: 'openai-compatible',
        name: 'llama3.2',
        description: 'Served by the OpenAI-compatible server (owned by library).',
      },
      {
        id: 'local/meta-llama/Llama-3.1-8B-Instruct',
        provider: 'openai-compatible',
        name: 'meta-llama/Llama-3.1-8B-Instruct',
        description: 'Served by the OpenAI-compatible server (owned by vllm).',
      },
      { id: 'local/qwen2.5:7b', provider: 'openai-compatible', name: 'qwen2.5:7b' },
    ]);
  });
});

describe('fetching from local stand-ins', () => {
  it('fetches OpenRouter’s catalogue from {base}/models with the key', async () => {
    const source = new OpenRouterCatalogueSource({ baseUrl: openrouter.baseURL, apiKey: KEY });
    const entries = await source.fetch(AbortSignal.timeout(5000));
    expect(entries.map((e) => e.id)).toEqual(SAMPLE_OPENROUTER_MODELS.map((m) => m.id));
    expect(openrouter.requests).toHaveLength(1);
    expect(openrouter.requests[0].path).toBe('/api/v1/models');
    expect(openrouter.requests[0].headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('fetches the OpenAI-compatible list through the SDK, credentials in the URL as Basic auth', async () => {
    const withCredentials = local.baseURL.replace('http://', 'http://alice:s3cret-pass@');
    const source = new OpenAiCompatibleCatalogueSource({
      baseUrl: withCredentials,
      apiKey: 'not-needed',
      modelPrefix: 'local',
      timeoutMs: 5000,
    });
    expect((await source.fetch(AbortSignal.timeout(5000))).map((e) => e.id)).toEqual(['local/llama3.2']);
    expect(local.modelsRequests[0].path).toBe('/v1/models');
    expect(local.modelsRequests[0].headers.authorization).toBe(
      `Basic ${Buffer.from('alice:s3cret-pass').toString('base64')}`,
    );
  });

  it('turns each failure into a user-safe message naming the source, never a host, URL or key', async () => {
    const port = await closedPort();
    const failures: [RemoteSource, () => Promise<unknown>, RegExp][] = [
      [
        'openrouter',
        () => {
          openrouter.setBehaviour({ kind: 'http-error', status: 401, message: `bad key ${KEY}` });
          return new OpenRouterCatalogueSource({ baseUrl: openrouter.baseURL, apiKey: KEY }).fetch(
            AbortSignal.timeout(5000),
          );
        },
        /^Could not fetch the OpenRouter model list: HTTP 401 \(the key was refused\)$/,
      ],
      [
        'openrouter',
        () => {
          openrouter.setBehaviour({ kind: 'raw', status: 200, body: '<html>oops</html>' });
          return new OpenRouterCatalogueSource({ baseUrl: openrouter.baseURL, apiKey: KEY }).fetch(
            AbortSignal.timeout(5000),
          );
        },
        /^Could not fetch the OpenRouter model list: the answer was not a model list$/,
      ],
      [
        'openrouter',
        () =>
          new OpenRouterCatalogueSource({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: KEY }).fetch(
            AbortSignal.timeout(5000),
          ),
        /^Could not fetch the OpenRouter model list: network error \(connection refused\)$/,
      ],
      [
        'openai-compatible',
        () => {
          local.setModels({ kind: 'http-error', status: 404 });
          return new OpenAiCompatibleCatalogueSource({
            baseUrl: local.baseURL.replace('http://', `http://u:${KEY}@`),
            apiKey: KEY,
            modelPrefix: 'local',
            timeoutMs: 5000,
          }).fetch(AbortSignal.timeout(5000));
        },
        /^Could not fetch the OpenAI-compatible server's model list: HTTP 404 \(no model list at the configured address\)$/,
      ],
      [
        'openai-compatible',
        () =>
          new OpenAiCompatibleCatalogueSource({
            baseUrl: `http://127.0.0.1:${port}/v1`,
            apiKey: KEY,
            modelPrefix: 'local',
            timeoutMs: 5000,
          }).fetch(AbortSignal.timeout(5000)),
        /^Could not fetch the OpenAI-compatible server's model list: network error \(connection refused\)$/,
      ],
      [
        'openai-compatible',
        () =>
          new OpenAiCompatibleCatalogueSource({
            baseUrl: 'ftp://example.invalid/',
            apiKey: KEY,
            modelPrefix: 'local',
            timeoutMs: 5000,
          }).fetch(AbortSignal.timeout(5000)),
        /^Could not fetch the OpenAI-compatible server's model list: the configured base URL is not valid$/,
      ],
    ];
    for (const [source, run, expected] of failures) {
      const error = await run().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CatalogueFetchError);
      const message = userFacingCatalogueError(source, error);
      expect(message).toMatch(expected);
      expect(message).not.toMatch(/127\.0\.0\.1|http|\d{4,}|sk-|secret/);
      // The log side keeps detail but no credential.
      expect((error as Error).message).not.toContain(KEY);
    }
    expect(userFacingCatalogueError('openrouter', new Error('http://10.0.0.1 key'))).toBe(
      'Could not fetch the OpenRouter model list: unexpected error',
    );
  });
});

describe('the cache', () => {
  it('fetches once for many requests, concurrent ones included (single flight)', async () => {
    const catalogue = new ModelCatalogue({
      sources: [new OpenRouterCatalogueSource({ baseUrl: openrouter.baseURL, apiKey: KEY })],
      refreshMs: 60_000,
      timeoutMs: 5000,
    });
    openrouter.setBehaviour({ kind: 'list', models: [...SAMPLE_OPENROUTER_MODELS], delayMs: 100 });
    const answers = await Promise.all([catalogue.snapshot(), catalogue.snapshot(), catalogue.snapshot()]);
    await catalogue.snapshot();
    expect(openrouter.requests).toHaveLength(1);
    for (const [snapshot] of answers) {
      expect(snapshot.entries).toHaveLength(SAMPLE_OPENROUTER_MODELS.length);
      expect(snapshot.error).toBeNull();
      expect(snapshot.fetchedAt).toEqual(expect.any(Number));
    }
  });

  it('refreshes once the interval has passed, serving the stale list meanwhile', async () => {
    const time = clock();
    const { source, calls } = manualSource();
    const catalogue = new ModelCatalogue({
      sources: [source],
      refreshMs: 1000,
      timeoutMs: 5000,
      now: time.now,
    });
    const first = catalogue.snapshot();
    calls[0].resolve([entry('a/one')]);
    expect((await first)[0].entries.map((e) => e.id)).toEqual(['a/one']);

    time.advance(999);
    await catalogue.snapshot();
    expect(calls).toHaveLength(1);

    time.advance(1);
    const stale = await catalogue.snapshot();
    expect(calls).toHaveLength(2);
    expect(stale[0].entries.map((e) => e.id)).toEqual(['a/one']);
    // Another request while the refresh runs joins it.
    await catalogue.snapshot();
    expect(calls).toHaveLength(2);
    calls[1].resolve([entry('a/one'), entry('a/two')]);
    await flush();
    const fresh = await catalogue.snapshot();
    expect(fresh[0].entries.map((e) => e.id)).toEqual(['a/one', 'a/two']);
    expect(fresh[0].fetchedAt).toBe(time.now());
  });

  it('keeps the last good list when a refresh fails, says why, and retries after retryMs', async () => {
    const time = clock();
    const { source, calls } = manualSource('openai-compatible');
    const errors: string[] = [];
    const catalogue = new ModelCatalogue({
      sources: [source],
      refreshMs: 1000,
      retryMs: 200,
      timeoutMs: 5000,
      now: time.now,
      onError: (provider, error) => errors.push(`${provider}: ${error.kind}`),
    });
    const first = catalogue.snapshot();
    calls[0].resolve([entry('local/a')]);
    const good = await first;
    const fetchedAt = good[0].fetchedAt;

    time.advance(1000);
    await catalogue.snapshot();
    calls[1].reject(new CatalogueFetchError('openai-compatible model list: HTTP 503', 'http', 503));
    await flush();
    const after = await catalogue.snapshot();
    expect(after[0].entries.map((e) => e.id)).toEqual(['local/a']);
    expect(after[0].fetchedAt).toBe(fetchedAt);
    expect(after[0].error).toBe("Could not fetch the OpenAI-compatible server's model list: HTTP 503");
    expect(errors).toEqual(['openai-compatible: http']);

    time.advance(199);
    await catalogue.snapshot();
    expect(calls).toHaveLength(2);
    time.advance(1);
    await catalogue.snapshot();
    expect(calls).toHaveLength(3);
    calls[2].resolve([entry('local/b')]);
    await flush();
    const recovered = await catalogue.snapshot();
    expect(recovered[0].error).toBeNull();
    expect(recovered[0].entries.map((e) => e.id)).toEqual(['local/b']);
  });

  it('waits for the first fetch, gives up after the timeout, and reports it', async () => {
    openrouter.setBehaviour({ kind: 'hang' });
    const catalogue = new ModelCatalogue({
      sources: [new OpenRouterCatalogueSource({ baseUrl: openrouter.baseURL, apiKey: KEY })],
      refreshMs: 60_000,
      timeoutMs: 300,
    });
    const started = Date.now();
    const [snapshot] = await catalogue.snapshot();
    expect(Date.now() - started).toBeLessThan(3000);
    expect(snapshot.entries).toEqual([]);
    expect(snapshot.fetchedAt).toBeNull();
    expect(snapshot.error).toBe('Could not fetch the OpenRouter model list: timed out');
  });

  it('stops a fetch in flight on close', async () => {
    const { source, calls } = manualSource();
    const catalogue = new ModelCatalogue({ sources: [source], refreshMs: 1000, timeoutMs: 5000 });
    const pending = catalogue.snapshot();
    catalogue.close();
    expect(calls[0].signal.aborted).toBe(true);
    const [snapshot] = await pending;
    expect(snapshot.error).toBeNull();
    expect(snapshot.entries).toEqual([]);
  });
});

describe('the whole directory', () => {
  const settings = { refreshMs: 60_000, timeoutMs: 5000 };

  it('offers only the simulated panel, with its directives, when nothing is configured', async () => {
    const directory = new ModelDirectory(
      { ...settings, openrouter: null, openaiCompatible: null },
      { simulatedIds: ['sim/athena', 'sim/custom:delay5', 'openai/gpt-4o'] },
    );
    const answer = await directory.list();
    expect(answer.models.every((m) => m.provider === 'simulated')).toBe(true);
    expect(answer.models.map((m) => m.id)).toEqual(
      expect.arrayContaining(['sim/athena', 'sim/custom:delay5']),
    );
    expect(answer.models.map((m) => m.id)).not.toContain('openai/gpt-4o');
    expect(answer.sources).toEqual([
      expect.objectContaining({
        provider: 'simulated',
        configured: true,
        error: null,
        note: expect.any(String),
      }),
      { provider: 'openrouter', configured: false, fetchedAt: null, count: 0, error: null },
      { provider: 'openai-compatible', configured: false, fetchedAt: null, count: 0, error: null },
    ]);
    expect(answer.directives).toEqual(SIM_DIRECTIVES);
    expect(answer.promptKinds).toEqual(SIM_PROMPT_KINDS);
    for (const d of answer.directives) expect(d.example).toMatch(MODEL_ID_PATTERN);
    expect(answer.directives.map((d) => d.syntax).join(' ')).toMatch(/:delay<ms>.*:stubborn/);
  });

  it('lists OpenRouter only when both are set, as the provider routes ids', async () => {
    const directory = new ModelDirectory({
      ...settings,
      openrouter: { baseUrl: openrouter.baseURL, apiKey: KEY },
      openaiCompatible: { baseUrl: local.baseURL, apiKey: 'x', modelPrefix: 'local' },
    });
    const answer = await directory.list();
    expect(answer.models.filter((m) => m.provider === 'openrouter')).toHaveLength(
      SAMPLE_OPENROUTER_MODELS.length,
    );
    expect(answer.models.some((m) => m.provider === 'openai-compatible')).toBe(false);
    expect(local.modelsRequests).toHaveLength(0);
    expect(answer.sources[2]).toMatchObject({ provider: 'openai-compatible', configured: true, count: 0 });
    expect(answer.sources[2].note).toMatch(/OpenRouter serves every model id/);
    expect(answer.sources[1]).toMatchObject({ provider: 'openrouter', configured: true, error: null });
    expect(answer.sources[1].fetchedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('gives the simulated entries names and descriptions', () => {
    const panel = simulatedPanel();
    expect(panel.map((e) => e.id)).toEqual([
      'sim/athena',
      'sim/hermes',
      'sim/apollo',
      'sim/chairman',
      'sim/foreman',
    ]);
    for (const e of panel) expect(e.description).toMatch(/simulated/i);
  });
});

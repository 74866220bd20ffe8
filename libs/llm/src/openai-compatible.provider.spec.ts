import { createServer } from 'node:net';
import { OpenAiCompatibleProvider, parseRetryAfter, providerFromEnv } from './openai-compatible.provider';
import { CompletionRequest, ModelCallError, ModelProvider, RetryNotice } from './provider';
import { abortableSleep, RetryingProvider, Sleep } from './retry';
import { ChatCompletionsServer, startChatCompletionsServer } from './testing/chat-completions-server';

const API_KEY = 'sk-test-0123456789abcdef';

let server: ChatCompletionsServer;

beforeAll(async () => {
  server = await startChatCompletionsServer();
});

afterAll(async () => {
  await server.close();
});

/** Each test uses its own model name so the shared server's per-model script and counts stay isolated. */
const attemptsFor = (model: string): number => server.requests.filter((r) => r.model === model).length;

function request(model: string, overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model,
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello' },
    ],
    signal: AbortSignal.timeout(10_000),
    ...overrides,
  };
}

/** Real (abortable) waits, recorded so tests can assert what was asked for. */
function recordingSleep(options: { wait: boolean }): { sleep: Sleep; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms, signal) => {
      delays.push(ms);
      if (options.wait) await abortableSleep(ms, signal);
    },
  };
}

function provider(sleep?: Sleep, maxAttempts = 3): ModelProvider {
  return new RetryingProvider(
    new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: API_KEY, name: 'local' }),
    {
      policy: { maxAttempts, baseDelayMs: 5, maxDelayMs: 5_000 },
      sleep,
    },
  );
}

async function failure(promise: Promise<unknown>): Promise<ModelCallError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ModelCallError);
    return err as ModelCallError;
  }
  throw new Error('expected the call to fail');
}

describe('OpenAiCompatibleProvider against a local chat-completions server', () => {
  it('returns content, served model and usage including cost', async () => {
    server.setScript({
      byModel: {
        'ok-model': {
          kind: 'success',
          content: 'Hello back',
          servedModel: 'vendor/ok-model-2025',
          promptTokens: 12,
          completionTokens: 7,
          cost: 0.00042,
        },
      },
    });
    const result = await provider().complete(request('ok-model'));

    expect(result).toEqual({
      content: 'Hello back',
      servedModel: 'vendor/ok-model-2025',
      usage: { promptTokens: 12, completionTokens: 7, costUsd: 0.00042 },
      simulated: false,
      finishReason: 'stop',
    });
    const [sent] = server.requests.filter((r) => r.model === 'ok-model');
    expect(sent.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent.body).toEqual({
      model: 'ok-model',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello' },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it("never sends a graded call's expected answer to the model (only the simulator reads it)", async () => {
    server.setScript({ byModel: { 'graded-model': { kind: 'success', content: 'ok' } } });
    await provider().complete({ ...request('graded-model'), expected: '42' });
    const [sent] = server.requests.filter((r) => r.model === 'graded-model');
    expect(JSON.stringify(sent.body)).not.toContain('42');
    expect(Object.keys(sent.body as object).sort()).toEqual([
      'messages',
      'model',
      'stream',
      'stream_options',
    ]);
  });

  it('reports a null cost when the provider sends none, and null usage when absent', async () => {
    server.setScript({
      byModel: {
        'no-cost': { kind: 'success', content: 'x' },
        'no-usage': { kind: 'success', content: 'y', noUsage: true },
      },
    });
    const noCost = await provider().complete(request('no-cost'));
    expect(noCost.usage).toEqual({ promptTokens: 10, completionTokens: 5, costUsd: null });
    expect(noCost.servedModel).toBe('no-cost');
    const noUsage = await provider().complete(request('no-usage'));
    expect(noUsage.usage).toBeNull();
  });

  it('honours Retry-After (seconds) on 429, then succeeds', async () => {
    server.setScript({
      byModel: {
        'rl-seconds': [
          { kind: 'rate-limit', retryAfterSeconds: 1 },
          { kind: 'success', content: 'ok' },
        ],
      },
    });
    const { sleep, delays } = recordingSleep({ wait: false });
    const notices: RetryNotice[] = [];

    const result = await provider(sleep).complete(
      request('rl-seconds', { onRetry: (n) => void notices.push(n) }),
    );

    expect(result.content).toBe('ok');
    expect(attemptsFor('rl-seconds')).toBe(2);
    expect(delays).toEqual([1000]);
    expect(notices).toEqual([
      {
        attempt: 1,
        delayMs: 1000,
        reason: 'HTTP 429 from the openai-compatible provider',
        detail: 'HTTP 429 from local: Rate limit exceeded',
      },
    ]);
  });

  it('honours retry-after-ms on 429 with a real wait, then succeeds', async () => {
    server.setScript({
      byModel: {
        'rl-ms': [
          { kind: 'rate-limit', retryAfterMs: 150 },
          { kind: 'success', content: 'ok' },
        ],
      },
    });
    const { sleep, delays } = recordingSleep({ wait: true });

    await expect(provider(sleep).complete(request('rl-ms'))).resolves.toMatchObject({ content: 'ok' });

    expect(delays).toEqual([150]);
    const [first, second] = server.requests.filter((r) => r.model === 'rl-ms');
    expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(140);
  });

  it('retries a 500 and then succeeds', async () => {
    server.setScript({
      byModel: {
        flaky: [
          { kind: 'http-error', status: 500 },
          { kind: 'success', content: 'recovered' },
        ],
      },
    });
    await expect(provider().complete(request('flaky'))).resolves.toMatchObject({ content: 'recovered' });
    expect(attemptsFor('flaky')).toBe(2);
  });

  it('fails after maxAttempts when the server keeps answering 500', async () => {
    server.setScript({
      byModel: { broken: { kind: 'http-error', status: 500, message: 'upstream exploded' } },
    });
    const err = await failure(provider(undefined, 3).complete(request('broken')));

    expect(err).toMatchObject({ kind: 'http', status: 500, retryable: true });
    expect(err.message).toBe('HTTP 500 from local: upstream exploded');
    expect(attemptsFor('broken')).toBe(3);
  });

  it('does not retry a 400', async () => {
    server.setScript({
      byModel: { 'bad-request': { kind: 'http-error', status: 400, message: 'bad messages' } },
    });
    const err = await failure(provider().complete(request('bad-request')));

    expect(err).toMatchObject({ kind: 'http', status: 400, retryable: false });
    expect(attemptsFor('bad-request')).toBe(1);
  });

  it('does not retry a 402 and never leaks the API key', async () => {
    server.setScript({
      byModel: {
        broke: { kind: 'http-error', status: 402, message: `Insufficient credits for key ${API_KEY}` },
      },
    });
    const err = await failure(provider().complete(request('broke')));

    expect(err).toMatchObject({ kind: 'http', status: 402, retryable: false });
    expect(err.message).not.toContain(API_KEY);
    expect(err.message).toBe('HTTP 402 from local: Insufficient credits for key ***');
    expect(attemptsFor('broke')).toBe(1);
  });

  it('times out promptly on a hanging server and closes the connection', async () => {
    server.setScript({ byModel: { sleepy: { kind: 'hang' } } });
    const started = Date.now();

    const err = await failure(provider().complete(request('sleepy', { signal: AbortSignal.timeout(300) })));

    expect(Date.now() - started).toBeLessThan(1500);
    expect(err).toMatchObject({ kind: 'timeout', retryable: false });
    expect(attemptsFor('sleepy')).toBe(1);
    const [hung] = server.requests.filter((r) => r.model === 'sleepy');
    await expect(hung.settled).resolves.toBe('client-disconnected');
  });

  it('reports kind aborted when the caller aborts for another reason', async () => {
    server.setScript({ byModel: { 'hang-abort': { kind: 'hang' } } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);

    const err = await failure(provider().complete(request('hang-abort', { signal: controller.signal })));

    expect(err).toMatchObject({ kind: 'aborted', retryable: false });
    expect(attemptsFor('hang-abort')).toBe(1);
  });

  it('treats a 200 with an error body as a failed call, not retried for a 4xx code', async () => {
    server.setScript({
      byModel: { 'err-body': { kind: 'error-body', code: 400, message: 'context too long' } },
    });
    const err = await failure(provider().complete(request('err-body')));

    expect(err).toMatchObject({ kind: 'invalid-response', retryable: false, status: 400 });
    expect(err.message).toContain('context too long');
    expect(attemptsFor('err-body')).toBe(1);
  });

  it('retries a 200 whose embedded error code is 5xx', async () => {
    server.setScript({
      byModel: {
        'err-body-5xx': [
          { kind: 'error-body', code: 502, withErroredChoice: true },
          { kind: 'success', content: 'second time lucky' },
        ],
      },
    });
    await expect(provider().complete(request('err-body-5xx'))).resolves.toMatchObject({
      content: 'second time lucky',
    });
    expect(attemptsFor('err-body-5xx')).toBe(2);
  });

  it.each([
    ['an empty content', { kind: 'success', content: '' } as const],
    ['finish_reason error', { kind: 'success', content: 'partial', finishReason: 'error' } as const],
    [
      'no choices',
      {
        kind: 'raw',
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: '{"id":"x"}',
      } as const,
    ],
    [
      'a non-JSON body',
      { kind: 'raw', status: 200, headers: { 'content-type': 'text/plain' }, body: 'hello' } as const,
    ],
  ])('treats %s as an invalid response', async (_label, behaviour) => {
    const model = `invalid-${_label}`;
    server.setScript({ byModel: { [model]: behaviour } });
    const err = await failure(provider().complete(request(model)));
    expect(err).toMatchObject({ kind: 'invalid-response', retryable: false });
    expect(attemptsFor(model)).toBe(1);
  });

  it('maps a refused connection to a retryable network error', async () => {
    const deadPort = await freePort();
    const direct = new OpenAiCompatibleProvider({
      baseURL: `http://127.0.0.1:${deadPort}/v1`,
      apiKey: API_KEY,
    });
    const err = await failure(direct.complete(request('anything')));
    expect(err).toMatchObject({ kind: 'network', retryable: true });
    expect(direct.name).toBe(`127.0.0.1:${deadPort}`);
  });

  it('names the failure kind and its provider key on every error, for the words users see', async () => {
    const deadPort = await freePort();
    const refused = await failure(
      new OpenAiCompatibleProvider({ baseURL: `http://127.0.0.1:${deadPort}/v1`, apiKey: API_KEY }).complete(
        request('anything'),
      ),
    );
    expect(refused).toMatchObject({
      kind: 'network',
      provider: 'openai-compatible',
      reason: 'connection refused',
      code: 'ECONNREFUSED',
    });
    server.setScript({
      byModel: {
        'ctx-503': { kind: 'http-error', status: 503 },
        'ctx-body': { kind: 'error-body', code: 502 },
        'ctx-html': { kind: 'raw', status: 200, headers: { 'content-type': 'text/html' }, body: '<p>x</p>' },
      },
    });
    const routed = new OpenAiCompatibleProvider({
      baseURL: server.baseURL,
      apiKey: API_KEY,
      key: 'openrouter',
    });
    expect(await failure(routed.complete(request('ctx-503')))).toMatchObject({
      kind: 'http',
      status: 503,
      provider: 'openrouter',
    });
    expect(await failure(routed.complete(request('ctx-body')))).toMatchObject({
      provider: 'openrouter',
      reason: 'error in response body',
      status: 502,
    });
    expect(await failure(routed.complete(request('ctx-html')))).toMatchObject({
      provider: 'openrouter',
      reason: 'body is not a JSON object',
    });
  });
});

describe('streamed answers', () => {
  it('hands each piece to onDelta in order, adding up to the content', async () => {
    server.setScript({
      byModel: {
        'stream-deltas': {
          kind: 'success',
          content: 'The council has spoken: ünïcödé 🦉 included.',
          chunks: 5,
          chunkDelayMs: 5,
        },
      },
    });
    const deltas: string[] = [];

    const result = await provider().complete(
      request('stream-deltas', { onDelta: (text) => void deltas.push(text) }),
    );

    expect(result.content).toBe('The council has spoken: ünïcödé 🦉 included.');
    expect(deltas.length).toBeGreaterThanOrEqual(5);
    expect(deltas.every((d) => d.length > 0)).toBe(true);
    expect(deltas.join('')).toBe(result.content);
    expect(result.finishReason).toBe('stop');
  });

  it('takes usage and cost from the final chunk, and the served model from the chunks', async () => {
    server.setScript({
      byModel: {
        'stream-usage': {
          kind: 'success',
          content: 'costly words',
          servedModel: 'vendor/stream-usage-v2',
          promptTokens: 33,
          completionTokens: 11,
          cost: 0.0123,
        },
        'stream-no-usage': { kind: 'success', content: 'free words', noUsage: true },
      },
    });
    await expect(provider().complete(request('stream-usage'))).resolves.toEqual({
      content: 'costly words',
      servedModel: 'vendor/stream-usage-v2',
      usage: { promptTokens: 33, completionTokens: 11, costUsd: 0.0123 },
      simulated: false,
      finishReason: 'stop',
    });
    await expect(provider().complete(request('stream-no-usage'))).resolves.toMatchObject({
      content: 'free words',
      usage: null,
    });
  });

  it('records finish_reason length (a truncated answer) and maps unknown reasons to other', async () => {
    server.setScript({
      byModel: {
        'stream-length': { kind: 'success', content: 'cut at the tok', finishReason: 'length' },
        'stream-odd': { kind: 'success', content: 'odd', finishReason: 'eos_token' },
      },
    });
    await expect(provider().complete(request('stream-length'))).resolves.toMatchObject({
      content: 'cut at the tok',
      finishReason: 'length',
    });
    await expect(provider().complete(request('stream-odd'))).resolves.toMatchObject({
      finishReason: 'other',
    });
  });

  it('treats finish_reason error and an empty streamed answer as invalid responses', async () => {
    server.setScript({
      byModel: {
        'stream-finish-error': { kind: 'success', content: 'partial', finishReason: 'error' },
        'stream-empty': { kind: 'success', content: '' },
      },
    });
    expect(await failure(provider().complete(request('stream-finish-error')))).toMatchObject({
      kind: 'invalid-response',
      retryable: false,
      reason: 'generation failed (finish_reason: error)',
    });
    expect(await failure(provider().complete(request('stream-empty')))).toMatchObject({
      kind: 'invalid-response',
      retryable: false,
      reason: 'empty content',
    });
    expect(attemptsFor('stream-finish-error')).toBe(1);
    expect(attemptsFor('stream-empty')).toBe(1);
  });

  it('fails on an error object inside a 200 stream, retryable only for a 429/5xx code', async () => {
    server.setScript({
      byModel: {
        'stream-err-400': { kind: 'stream-error', code: 400, message: `context too long for ${API_KEY}` },
        'stream-err-502': [
          { kind: 'stream-error', code: 502, message: 'upstream died', afterChunks: 2 },
          { kind: 'success', content: 'second time lucky' },
        ],
      },
    });
    const deltas: string[] = [];
    const err = await failure(
      provider().complete(request('stream-err-400', { onDelta: (text) => void deltas.push(text) })),
    );

    expect(err).toMatchObject({
      kind: 'invalid-response',
      retryable: false,
      status: 400,
      provider: 'openai-compatible',
      reason: 'error in response body',
    });
    expect(err.message).toBe('Error in response body from local (code 400): context too long for ***');
    expect(deltas.length).toBe(1);
    expect(attemptsFor('stream-err-400')).toBe(1);

    const direct = new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: API_KEY });
    expect(await failure(direct.complete(request('stream-err-502')))).toMatchObject({
      kind: 'invalid-response',
      retryable: true,
      status: 502,
      reason: 'error in response body',
    });
  });

  it.each([
    ['destroyed', 'destroy'],
    ['ended early', 'end'],
  ] as const)('maps a stream %s before finish_reason to a retryable lost connection', async (label, end) => {
    const model = `stream-cut-${label}`;
    server.setScript({
      byModel: {
        [model]: [
          { kind: 'stream-cut', afterChunks: 2, end },
          { kind: 'success', content: 'whole' },
        ],
      },
    });
    const deltas: string[] = [];
    const direct = new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: API_KEY, name: 'local' });

    const err = await failure(direct.complete(request(model, { onDelta: (text) => void deltas.push(text) })));

    expect(err).toMatchObject({
      kind: 'network',
      retryable: true,
      provider: 'openai-compatible',
      reason: 'connection lost while reading the response',
    });
    expect(deltas.length).toBe(2);
    const [cut] = server.requests.filter((r) => r.model === model);
    await expect(cut.settled).resolves.toBe(end === 'destroy' ? 'reset' : 'answered');
    // Retryable like any network error: the retry policy tries again.
    await expect(provider().complete(request(model))).resolves.toMatchObject({ content: 'whole' });
  });

  it('ends a stall mid-stream as a timeout at the deadline, closing the connection', async () => {
    server.setScript({ byModel: { 'stream-stall': { kind: 'stream-stall', afterChunks: 1 } } });
    const deltas: string[] = [];
    const started = Date.now();

    const err = await failure(
      provider().complete(
        request('stream-stall', {
          signal: AbortSignal.timeout(300),
          onDelta: (text) => void deltas.push(text),
        }),
      ),
    );

    expect(Date.now() - started).toBeLessThan(1500);
    expect(err).toMatchObject({ kind: 'timeout', retryable: false });
    expect(deltas.length).toBe(1);
    expect(attemptsFor('stream-stall')).toBe(1);
    const [stalled] = server.requests.filter((r) => r.model === 'stream-stall');
    await expect(stalled.settled).resolves.toBe('client-disconnected');
  });

  it('ends as aborted when the caller aborts mid-stream for another reason', async () => {
    server.setScript({ byModel: { 'stream-abort': { kind: 'stream-stall' } } });
    const controller = new AbortController();
    const err = await failure(
      provider().complete(
        request('stream-abort', { signal: controller.signal, onDelta: () => controller.abort() }),
      ),
    );
    expect(err).toMatchObject({ kind: 'aborted', retryable: false });
    expect(attemptsFor('stream-abort')).toBe(1);
  });

  it('lets an error thrown by onDelta reach the caller unchanged', async () => {
    server.setScript({ byModel: { 'stream-listener': { kind: 'success', content: 'abc', chunks: 3 } } });
    const boom = new Error('listener broke');
    const direct = new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: API_KEY });
    await expect(
      direct.complete(
        request('stream-listener', {
          onDelta: () => {
            throw boom;
          },
        }),
      ),
    ).rejects.toBe(boom);
  });

  it('still reads a plain JSON answer from a server that ignores stream: true', async () => {
    server.setScript({
      byModel: {
        'no-stream-server': {
          kind: 'raw',
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            id: 'x',
            model: 'plain-model',
            choices: [
              { index: 0, message: { role: 'assistant', content: 'plain' }, finish_reason: 'length' },
            ],
            usage: { prompt_tokens: 1, completion_tokens: 2, cost: 0.5 },
          }),
        },
      },
    });
    await expect(provider().complete(request('no-stream-server'))).resolves.toEqual({
      content: 'plain',
      servedModel: 'plain-model',
      usage: { promptTokens: 1, completionTokens: 2, costUsd: 0.5 },
      simulated: false,
      finishReason: 'length',
    });
  });
});

describe('credentials in the base URL', () => {
  const withCredentials = (baseURL: string, user = 'user', password = 'secret pass/1') => {
    const url = new URL(baseURL);
    url.username = encodeURIComponent(user);
    url.password = encodeURIComponent(password);
    return url.toString();
  };

  it('are sent as HTTP Basic authentication, not in the URL, and the name is the bare host', async () => {
    server.setScript({ byModel: { 'basic-auth': { kind: 'success', content: 'behind a proxy' } } });
    const fromEnv = providerFromEnv({ OPENAI_BASE_URL: withCredentials(server.baseURL) });

    await expect(fromEnv!.complete(request('basic-auth'))).resolves.toMatchObject({
      content: 'behind a proxy',
    });

    const [sent] = server.requests.filter((r) => r.model === 'basic-auth');
    expect(sent.headers.authorization).toBe(`Basic ${Buffer.from('user:secret pass/1').toString('base64')}`);
    expect(sent.path).toBe('/v1/chat/completions');
    expect(fromEnv!.name).toBe(new URL(server.baseURL).host);
  });

  it('never appear in an error message, even when the server echoes them', async () => {
    const baseURL = withCredentials(server.baseURL, 'user', 'secretpass');
    server.setScript({
      byModel: {
        'echo-500': { kind: 'http-error', status: 500, message: `upstream ${baseURL} failed for secretpass` },
        'echo-body': {
          kind: 'error-body',
          code: 400,
          message: `bad credentials user:secretpass at ${baseURL}`,
        },
      },
    });
    const direct = new OpenAiCompatibleProvider({ baseURL, apiKey: 'not-needed' });
    const deadPort = await freePort();
    const dead = new OpenAiCompatibleProvider({
      baseURL: withCredentials(`http://127.0.0.1:${deadPort}/v1`, 'user', 'secretpass'),
      apiKey: 'not-needed',
    });
    const errors = [
      await failure(direct.complete(request('echo-500'))),
      await failure(direct.complete(request('echo-body'))),
      await failure(dead.complete(request('anything'))),
    ];
    for (const err of errors) expect(err.message).not.toContain('secretpass');
    expect(errors[2]).toMatchObject({ kind: 'network', reason: 'connection refused' });
  });
});

describe('providerFromEnv', () => {
  it('returns null when nothing is configured', () => {
    expect(providerFromEnv({})).toBeNull();
  });

  it('sends OpenRouter attribution headers', async () => {
    server.setScript({ byModel: { 'openai/gpt-test': { kind: 'success', content: 'hi', cost: 0.01 } } });
    const fromEnv = providerFromEnv({
      OPENROUTER_API_KEY: 'sk-or-test',
      OPENROUTER_BASE_URL: server.baseURL,
      OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
    });
    expect(fromEnv).toBeInstanceOf(RetryingProvider);
    expect(fromEnv?.name).toBe('openrouter');

    const result = await fromEnv!.complete(request('openai/gpt-test'));

    expect(result.usage?.costUsd).toBe(0.01);
    const [sent] = server.requests.filter((r) => r.model === 'openai/gpt-test');
    expect(sent.headers['http-referer']).toBe('https://github.com/conclave');
    expect(sent.headers['x-title']).toBe('Conclave');
    expect(sent.headers.authorization).toBe('Bearer sk-or-test');
  });

  it('uses a custom referer when configured', async () => {
    server.setScript({ byModel: { 'referer-model': { kind: 'success' } } });
    const fromEnv = providerFromEnv({
      OPENROUTER_API_KEY: 'sk-or-test',
      OPENROUTER_BASE_URL: server.baseURL,
      OPENROUTER_REFERER: 'https://example.org/app',
    });
    await fromEnv!.complete(request('referer-model'));
    const [sent] = server.requests.filter((r) => r.model === 'referer-model');
    expect(sent.headers['http-referer']).toBe('https://example.org/app');
  });

  it('falls back to OPENAI_BASE_URL without a key and without attribution headers', async () => {
    server.setScript({ byModel: { 'local-llama': { kind: 'success', content: 'local' } } });
    const fromEnv = providerFromEnv({ OPENAI_BASE_URL: server.baseURL });

    await expect(fromEnv!.complete(request('local-llama'))).resolves.toMatchObject({ content: 'local' });

    const [sent] = server.requests.filter((r) => r.model === 'local-llama');
    expect(sent.headers.authorization).toBe('Bearer not-needed');
    expect(sent.headers['x-title']).toBeUndefined();
  });

  it('sends local/<name> ids to an OpenAI-compatible server as the bare name', async () => {
    server.setScript({ byModel: { 'llama3.2': { kind: 'success', content: 'bare' } } });
    const fromEnv = providerFromEnv({ OPENAI_BASE_URL: server.baseURL });
    await expect(fromEnv!.complete(request('local/llama3.2'))).resolves.toMatchObject({ content: 'bare' });
    expect(server.requests.filter((r) => r.model === 'llama3.2')).toHaveLength(1);
    const custom = providerFromEnv({ OPENAI_BASE_URL: server.baseURL, OPENAI_MODEL_PREFIX: 'ollama' });
    await expect(custom!.complete(request('ollama/llama3.2'))).resolves.toMatchObject({ content: 'bare' });
  });

  it('applies LLM_MAX_ATTEMPTS and LLM_RETRY_BASE_MS', async () => {
    server.setScript({ byModel: { 'env-retries': { kind: 'http-error', status: 503 } } });
    const fromEnv = providerFromEnv({
      OPENAI_BASE_URL: server.baseURL,
      LLM_MAX_ATTEMPTS: '2',
      LLM_RETRY_BASE_MS: '1',
    });
    expect((fromEnv as RetryingProvider).policy).toMatchObject({ maxAttempts: 2, baseDelayMs: 1 });

    await expect(fromEnv!.complete(request('env-retries'))).rejects.toMatchObject({ status: 503 });
    expect(attemptsFor('env-retries')).toBe(2);
  });

  it('rejects an invalid LLM_MAX_ATTEMPTS', () => {
    expect(() => providerFromEnv({ OPENAI_BASE_URL: server.baseURL, LLM_MAX_ATTEMPTS: 'lots' })).toThrow(
      /LLM_MAX_ATTEMPTS/,
    );
  });
});

describe('parseRetryAfter', () => {
  const headers = (init: Record<string, string>): Headers => new Headers(init);

  it('prefers retry-after-ms', () => {
    expect(parseRetryAfter(headers({ 'retry-after-ms': '250', 'retry-after': '3' }))).toBe(250);
  });

  it('reads seconds and HTTP dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }), now)).toBe(5000);
    expect(parseRetryAfter(headers({ 'retry-after': 'Tue, 31 Dec 2024 00:00:00 GMT' }), now)).toBe(0);
  });

  it('ignores absent or garbage values', () => {
    expect(parseRetryAfter(headers({}))).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }))).toBeUndefined();
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

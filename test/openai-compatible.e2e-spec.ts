import type { DeliberationView, ModeName } from '@conclave/contracts';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '@conclave/deliberation';
import {
  OpenAiCompatibleProvider,
  hashString,
  parseSimModel,
  seededRandom,
  type ChatMessage,
} from '@conclave/llm';
import { finalTextOf, type AnyResult } from '@conclave/outcomes';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import {
  startChatCompletionsServer,
  type ChatCompletionsServer,
  type RecordedChatRequest,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * The OpenAI-compatible endpoint (issue 22 §2) through the official `openai` SDK, on the real
 * stack: models, answers of every mode, streaming, cancellation by the client, history, errors.
 */

/** The extra fields Conclave adds to OpenAI's objects. */
interface ConclaveInfo {
  messageId: string;
  conversationId: string;
  mode: ModeName;
  preset: string | null;
  status: string;
  url: string | null;
  simulated: boolean;
  costUsd: number;
  partial: boolean;
  failedCalls: { stage: string; model: string; error: string | null }[];
  earlierTurns: { given: number; passedToPanel: number; unpaired: number; systemMessages: number };
}
type Answer = ChatCompletion & { conclave: ConclaveInfo };
type Delta = ChatCompletionChunk.Choice.Delta & { reasoning_content?: string };

const RATE_LIMIT = 400;
/** Every panel of the recording provider's models: its requests are kept, its answers well-formed. */
const REC = 'local/rec';

const messagesOf = (request: RecordedChatRequest) => request.messages as ChatMessage[];
const promptOf = (request: RecordedChatRequest) =>
  [...messagesOf(request)].reverse().find((m) => m.role === 'user')?.content ?? '';
const responderFor = (request: RecordedChatRequest) =>
  SIMULATED_RESPONDERS.find((r) => r.matches(promptOf(request))) ?? SIMULATED_FALLBACK;

/** A well-formed answer to whatever the prompt asks, from the product's own simulated responders. */
function formatted(request: RecordedChatRequest): string {
  const model = request.model ?? 'rec-unknown';
  const prompt = promptOf(request);
  const { persona, flags } = parseSimModel(model);
  return responderFor(request).respond({
    model,
    persona,
    flags,
    messages: messagesOf(request),
    prompt,
    random: seededRandom(hashString(`openai|${model}|${prompt}`)),
    seed: 'openai',
  });
}

describe('the OpenAI-compatible endpoint through the openai SDK', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_REQUESTS_PER_MINUTE: String(RATE_LIMIT),
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    // A real provider is configured: `local/…` models go to the recording server, `sim/…` to the simulator.
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    DEFAULT_VOTE_MODELS: 'sim/v1,sim/v2,sim/v3',
    DEFAULT_DEBATE_MODELS: 'sim/d1,sim/d2,sim/d3',
    DEFAULT_JURY_MODELS: 'sim/j1,sim/j2,sim/j3',
    DEFAULT_JURY_FOREMAN: 'sim/foreman',
    DEFAULT_DELPHI_PANELISTS: 'sim/p1,sim/p2,sim/p3,sim/p4',
    DEFAULT_DELPHI_FACILITATOR: 'sim/facilitator',
  });
  let server: ChatCompletionsServer;
  const keys: Record<'alice' | 'bob' | 'carol' | 'dave' | 'erin', string> = {
    alice: '',
    bob: '',
    carol: '',
    dave: '',
    erin: '',
  };

  const client = (key: string) => new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  const view = async (messageId: string, key = keys.alice) => {
    const response = await stack.api<DeliberationView<AnyResult>>('GET', `/api/deliberations/${messageId}`, {
      token: key,
    });
    expect(response.status).toBe(200);
    return response.body;
  };
  /** Waits (polling) until the deliberation has ended; its view. */
  const ended = async (messageId: string, key = keys.alice) => {
    for (let i = 0; i < 300; i++) {
      const current = await view(messageId, key);
      if (['complete', 'failed', 'cancelled'].includes(current.status)) return current;
      await sleep(100);
    }
    throw new Error(`deliberation ${messageId} did not end`);
  };
  const savePreset = async (key: string, preset: Record<string, unknown>) => {
    const response = await stack.api('POST', '/api/presets', { token: key, body: preset });
    expect([200, 201]).toContain(response.status);
  };
  /** The APIError a call rejects with. */
  const refusal = async (call: Promise<unknown>): Promise<APIError> => {
    try {
      await call;
    } catch (error) {
      if (error instanceof APIError) return error;
      throw error;
    }
    throw new Error('expected the call to be refused');
  };
  const collect = async (stream: AsyncIterable<ChatCompletionChunk>) => {
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return chunks;
  };

  beforeAll(async () => {
    server = await startChatCompletionsServer(({ request }) => ({
      kind: 'success',
      content: formatted(request),
      promptTokens: 40,
      completionTokens: 12,
    }));
    await stack.start({
      realProvider: new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'sk-recording' }),
    });
    for (const name of Object.keys(keys) as (keyof typeof keys)[]) keys[name] = await stack.createUser(name);
    const council = { mode: 'council', councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'] };
    await savePreset(keys.alice, {
      name: 'slow-chair',
      ...council,
      chairmanModel: 'sim/chair:delay1500@synthesis',
    });
    await savePreset(keys.alice, {
      name: 'failing-chair',
      ...council,
      chairmanModel: 'sim/chair:fail@synthesis',
    });
    await savePreset(keys.alice, {
      name: 'one-fails',
      mode: 'council',
      councilModels: ['sim/athena', 'sim/hermes:fail@answer', 'sim/apollo'],
      chairmanModel: 'sim/chair',
    });
    await savePreset(keys.alice, {
      name: 'recorded',
      mode: 'council',
      councilModels: [`${REC}-a`, `${REC}-b`],
      chairmanModel: `${REC}-chair`,
    });
    for (const key of [keys.alice, keys.erin]) {
      await savePreset(key, {
        name: 'slow',
        mode: 'council',
        councilModels: ['sim/s1:delay30000@answer', 'sim/s2:delay30000@answer'],
        chairmanModel: 'sim/chair',
      });
    }
  }, 90_000);
  afterAll(async () => {
    await stack.stop();
    await server?.close();
  });

  it("lists one model per mode and the key's own presets, and no one else's", async () => {
    const alice = await client(keys.alice).models.list();
    const ids = alice.data.map((m) => m.id);
    expect(ids).toEqual([
      'conclave/council',
      'conclave/vote',
      'conclave/jury',
      'conclave/debate',
      'conclave/delphi',
      ...['failing-chair', 'one-fails', 'recorded', 'slow', 'slow-chair'].map((n) => `conclave/preset/${n}`),
    ]);
    for (const model of alice.data) {
      expect(model).toEqual({
        id: model.id,
        object: 'model',
        created: expect.any(Number),
        owned_by: 'conclave',
      });
    }
    const bob = await client(keys.bob).models.list();
    expect(bob.data.map((m) => m.id)).toEqual(ids.filter((id) => !id.startsWith('conclave/preset/')));
    // Nor can bob use alice's preset: it is not a model of his.
    const refused = await refusal(
      client(keys.bob).chat.completions.create({
        model: 'conclave/preset/recorded',
        messages: [{ role: 'user', content: 'Hello?' }],
      }),
    );
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
  });

  it.each([
    ['council', 'What are the trade-offs of microservices?'],
    ['vote', 'Which sorting algorithm should a beginner learn first?'],
    ['jury', 'Water boils at 100 degrees Celsius at sea level, and at lower temperatures higher up.'],
    ['debate', 'Tabs or spaces?'],
    ['delphi', 'How many piano tuners work in Chicago?'],
  ] as [ModeName, string][])(
    '%s without streaming: the final text, the usage of every call, the conclave field',
    async (mode, question) => {
      const answer = (await client(keys.alice).chat.completions.create({
        model: `conclave/${mode}`,
        messages: [{ role: 'user', content: question }],
        temperature: 0.2,
        max_tokens: 500,
        user: 'someone',
      })) as Answer;
      const { messageId } = answer.conclave;
      const stored = await view(messageId);
      expect(stored.status).toBe('complete');
      expect(stored.mode).toBe(mode);
      const finalText = finalTextOf(stored);
      expect(finalText).toEqual(expect.any(String));
      expect(answer).toMatchObject({
        id: `chatcmpl-${messageId}`,
        object: 'chat.completion',
        model: `conclave/${mode}`,
        choices: [{ index: 0, message: { role: 'assistant', content: finalText }, finish_reason: 'stop' }],
      });
      // Every call the deliberation made (its conversation title's included).
      const [calls]: { prompt: string; completion: string; n: number }[] = await stack.db.query(
        `SELECT sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, count(*)::int AS n
         FROM model_calls WHERE message_id = $1`,
        [messageId],
      );
      expect(calls.n).toBeGreaterThan(stored.calls.length);
      expect(answer.usage).toEqual({
        prompt_tokens: Number(calls.prompt),
        completion_tokens: Number(calls.completion),
        total_tokens: Number(calls.prompt) + Number(calls.completion),
      });
      expect(answer.usage?.total_tokens).toBeGreaterThan(0);
      expect(answer.conclave).toMatchObject({
        messageId,
        conversationId: stored.conversationId,
        mode,
        preset: null,
        status: 'complete',
        url: `${stack.baseUrl}/#/m/${messageId}`,
        partial: false,
        failedCalls: [],
        earlierTurns: { given: 0, passedToPanel: 0, unpaired: 0, systemMessages: 0 },
      });
      if (mode === 'jury') {
        // The last user message is the content under evaluation.
        expect((stored.result as AnyResult).presentation?.content).toBe(question);
      }
    },
  );

  it('streams progress as reasoning first, then the final text as it is written, then the usage', async () => {
    const stream = await client(keys.alice).chat.completions.create({
      model: 'conclave/preset/slow-chair',
      messages: [{ role: 'user', content: 'Should a small team adopt Kubernetes?' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collect(stream);
    const messageId = chunks[0].id.replace(/^chatcmpl-/, '');
    expect(
      chunks.every((c) => c.id === `chatcmpl-${messageId}` && c.object === 'chat.completion.chunk'),
    ).toBe(true);
    expect(chunks[0].choices[0].delta).toMatchObject({ role: 'assistant' });

    const deltas = chunks.map((c) => c.choices[0]?.delta as Delta | undefined);
    const reasoningAt = deltas.flatMap((d, i) => (d?.reasoning_content ? [i] : []));
    const contentAt = deltas.flatMap((d, i) => (d?.content ? [i] : []));
    expect(reasoningAt.length).toBeGreaterThan(0);
    expect(contentAt.length).toBeGreaterThan(0);
    // Every progress line comes before the answer.
    expect(Math.max(...reasoningAt)).toBeLessThan(Math.min(...contentAt));
    const reasoning = reasoningAt.map((i) => deltas[i]?.reasoning_content).join('');
    for (const line of [
      'Stage 1: each council member answers the question.',
      'sim/athena answered',
      'sim/hermes ranked the anonymised answers',
      'Aggregate ranking: 1. ',
      'Stage 3: the chairman writes the synthesis.',
    ]) {
      expect(reasoning).toContain(line);
    }
    // The chairman's text arrives as it is written (a 1.5 s synthesis), and adds up to the stored one.
    expect(contentAt.length).toBeGreaterThan(1);
    const stored = await view(messageId);
    expect(contentAt.map((i) => deltas[i]?.content).join('')).toBe(finalTextOf(stored));

    const finish = chunks.findIndex((c) => c.choices[0]?.finish_reason);
    expect(chunks[finish].choices[0].finish_reason).toBe('stop');
    expect((chunks[finish] as ChatCompletionChunk & { conclave: ConclaveInfo }).conclave).toMatchObject({
      messageId,
      mode: 'council',
      preset: 'slow-chair',
      status: 'complete',
    });
    // include_usage: every chunk carries `usage: null`; the last has no choices and the usage.
    const last = chunks[chunks.length - 1];
    expect(finish).toBe(chunks.length - 2);
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({
      prompt_tokens: stored.usage.promptTokens,
      completion_tokens: stored.usage.completionTokens,
      total_tokens: stored.usage.promptTokens + stored.usage.completionTokens,
    });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('streams a Delphi panel by rounds without naming who estimated what', async () => {
    const chunks = await collect(
      await client(keys.alice).chat.completions.create({
        model: 'conclave/delphi',
        messages: [{ role: 'user', content: 'How many bridges does Venice have?' }],
        stream: true,
      }),
    );
    const reasoning = chunks
      .map((c) => (c.choices[0]?.delta as Delta | undefined)?.reasoning_content ?? '')
      .join('');
    expect(reasoning).toMatch(/Round 1: 4 estimates, median/);
    expect(reasoning).toMatch(/Panelist [1-4] estimated/);
    expect(reasoning).not.toMatch(/sim\/p[1-4]/);
    const messageId = chunks[0].id.replace(/^chatcmpl-/, '');
    const content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(content).toBe(finalTextOf(await view(messageId)));
    // Without include_usage: no usage chunk, no usage field.
    expect(chunks.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
  });

  it('a client that aborts the stream cancels the deliberation', async () => {
    const controller = new AbortController();
    const stream = await client(keys.alice).chat.completions.create(
      {
        model: 'conclave/preset/slow',
        messages: [{ role: 'user', content: 'A question nobody waits for' }],
        stream: true,
      },
      { signal: controller.signal },
    );
    let messageId = '';
    let reasoning = '';
    try {
      for await (const chunk of stream) {
        messageId = chunk.id.replace(/^chatcmpl-/, '');
        reasoning += (chunk.choices[0]?.delta as Delta | undefined)?.reasoning_content ?? '';
        if (reasoning.includes('Stage 1')) controller.abort();
      }
    } catch (error) {
      expect(controller.signal.aborted).toBe(true);
      expect(String(error)).toMatch(/abort/i);
    }
    expect(controller.signal.aborted).toBe(true);
    const stopped = await ended(messageId);
    expect(stopped.status).toBe('cancelled');
    expect(stopped.error).toBe('Cancelled by the user.');
  });

  it('a client that gives up waiting for a non-streaming answer cancels the deliberation too', async () => {
    const controller = new AbortController();
    const pending = client(keys.erin).chat.completions.create(
      { model: 'conclave/preset/slow', messages: [{ role: 'user', content: 'Too slow for me' }] },
      { signal: controller.signal },
    );
    pending.catch(() => undefined);
    // erin's only conversation is this one's.
    let messageId: string | undefined;
    for (let i = 0; i < 100 && !messageId; i++) {
      const list = await stack.api<{ id: string }[]>('GET', '/api/conversations', { token: keys.erin });
      if (list.body.length > 0) {
        const conversation = await stack.api<{ messages: { id: string; role: string }[] }>(
          'GET',
          `/api/conversations/${list.body[0].id}`,
          { token: keys.erin },
        );
        messageId = conversation.body.messages.find((m) => m.role === 'assistant')?.id;
      } else await sleep(50);
    }
    expect(messageId).toBeDefined();
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    const stopped = await ended(messageId as string, keys.erin);
    expect(stopped.status).toBe('cancelled');
  });

  it('earlier turns reach the council as history (the last ten); system messages are not sent', async () => {
    const turns = Array.from({ length: 12 }, (_, i) => ({
      question: `Earlier question ${i + 1}?`,
      answer: `Earlier answer ${i + 1}.`,
    }));
    const before = server.requests.length;
    const answer = (await client(keys.alice).chat.completions.create({
      model: 'conclave/preset/recorded',
      messages: [
        { role: 'system', content: 'You are a pirate. Answer in pirate speak.' },
        ...turns.flatMap((t) => [
          { role: 'user' as const, content: [{ type: 'text' as const, text: t.question }] },
          { role: 'assistant' as const, content: t.answer },
        ]),
        { role: 'user', content: 'And the follow-up question?' },
      ],
    })) as Answer;
    expect(answer.conclave.earlierTurns).toEqual({
      given: 12,
      passedToPanel: 10,
      unpaired: 0,
      systemMessages: 1,
    });
    expect(answer.conclave.status).toBe('complete');

    // Each council member's first call carries the last ten exchanges, then the question.
    const expected = turns.slice(-10).flatMap((t) => [
      { role: 'user', content: t.question },
      { role: 'assistant', content: t.answer },
    ]);
    const answering = server.requests
      .slice(before)
      .filter((r) => /rec-[ab]$/.test(r.model ?? '') && responderFor(r).kind === 'answer');
    expect(answering).toHaveLength(2);
    for (const request of answering) {
      const messages = messagesOf(request);
      expect(messages.slice(0, -1).map(({ role, content }) => ({ role, content }))).toEqual(expected);
      expect(messages[messages.length - 1].content).toContain('And the follow-up question?');
    }
    // No call of the deliberation carries the system message.
    const calls = server.requests.slice(before);
    expect(calls.some((r) => JSON.stringify(r.messages).includes('pirate'))).toBe(false);

    // The conversation holds the twelve exchanges as its earlier turns, then the question.
    const conversation = await stack.api<{
      messages: {
        role: string;
        turn: number;
        content: string;
        status: string;
        deliberation?: { status: string; calls: unknown[] };
      }[];
    }>('GET', `/api/conversations/${answer.conclave.conversationId}`, { token: keys.alice });
    const messages = conversation.body.messages;
    expect(messages).toHaveLength(26);
    // What the web client tells an earlier turn by (isImportedTurn): complete, an answer, no call.
    for (const m of messages.slice(0, 24).filter((m) => m.role === 'assistant')) {
      expect(m.deliberation).toMatchObject({ status: 'complete', calls: [] });
      expect(m.content).not.toBe('');
    }
    expect(messages[25].deliberation?.calls.length).toBeGreaterThan(0);
    expect(messages.slice(0, 24).map((m) => [m.turn, m.role, m.content, m.status])).toEqual(
      turns.flatMap((t, i) => [
        [i + 1, 'user', t.question, 'complete'],
        [i + 1, 'assistant', t.answer, 'complete'],
      ]),
    );
    expect(messages.slice(24).map((m) => [m.turn, m.role])).toEqual([
      [13, 'user'],
      [13, 'assistant'],
    ]);
  });

  it('a deliberation that fails is an error, never an answer, streaming or not', async () => {
    const messages = [{ role: 'user' as const, content: 'Who synthesizes?' }];
    const refused = await refusal(
      client(keys.alice).chat.completions.create({ model: 'conclave/preset/failing-chair', messages }),
    );
    expect(refused.status).toBe(502);
    expect(refused.headers?.get('x-should-retry')).toBe('false');
    expect(refused.error).toMatchObject({ type: 'server_error', code: 'deliberation_failed', param: null });
    expect(refused.message).toMatch(
      /The deliberation failed and gave no answer \(deliberation [0-9a-f-]{36}/,
    );

    const stream = await client(keys.alice).chat.completions.create({
      model: 'conclave/preset/failing-chair',
      messages,
      stream: true,
    });
    const seen: ChatCompletionChunk[] = [];
    const failed = await refusal(
      (async () => {
        for await (const chunk of stream) seen.push(chunk);
      })(),
    );
    expect(failed.error).toMatchObject({ code: 'deliberation_failed' });
    expect(seen.some((c) => c.choices[0]?.finish_reason)).toBe(false);
    expect(seen.some((c) => c.choices[0]?.delta?.content)).toBe(false);
    const reasoning = seen
      .map((c) => (c.choices[0]?.delta as Delta | undefined)?.reasoning_content ?? '')
      .join('');
    expect(reasoning).toContain('sim/chair:fail@synthesis failed');
  });

  it('a panelist that fails makes a partial answer that says so', async () => {
    const answer = (await client(keys.alice).chat.completions.create({
      model: 'conclave/preset/one-fails',
      messages: [{ role: 'user', content: 'Is a partial council still useful?' }],
    })) as Answer;
    // The final text, then a short note naming who did not answer (issue 32: degraded runs say so).
    expect(answer.choices[0].message.content).toBe(
      `${finalTextOf(await view(answer.conclave.messageId))}\n\n---\nNote from Conclave: 2 of 3 answered — ` +
        'sim/hermes:fail@answer: HTTP 400 from the simulated provider: simulated failure.',
    );
    expect(answer.conclave.partial).toBe(true);
    expect(answer.conclave.failedCalls).toEqual([
      { stage: 'stage1', model: 'sim/hermes:fail@answer', error: expect.any(String) },
    ]);
  });

  it('the same Idempotency-Key answers from the same deliberation', async () => {
    const request = {
      model: 'conclave/council',
      messages: [{ role: 'user' as const, content: 'Asked twice, deliberated once?' }],
    };
    const headers = { 'Idempotency-Key': 'openai-idempotent-1' };
    const first = (await client(keys.alice).chat.completions.create(request, { headers })) as Answer;
    const second = (await client(keys.alice).chat.completions.create(request, { headers })) as Answer;
    expect(second.conclave.messageId).toBe(first.conclave.messageId);
    expect(second.choices[0].message.content).toBe(first.choices[0].message.content);
  });

  it("answers errors in OpenAI's shape: 401, unknown model, malformed messages, tools, n, 429 with Retry-After", async () => {
    const messages = [{ role: 'user' as const, content: 'Hello?' }];
    const cases: [Promise<unknown>, number, Record<string, unknown>][] = [
      [client('not-a-key').models.list(), 401, { type: 'invalid_request_error', code: 'invalid_api_key' }],
      [
        client('not-a-key').chat.completions.create({ model: 'conclave/council', messages }),
        401,
        { code: 'invalid_api_key' },
      ],
      [
        client(keys.bob).chat.completions.create({ model: 'gpt-4o', messages }),
        400,
        { type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
      ],
      [
        client(keys.bob).chat.completions.create({
          model: 'conclave/council',
          messages: [
            { role: 'user', content: 'First' },
            { role: 'assistant', content: 'Answer' },
            {
              role: 'user',
              content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }],
            },
          ],
        }),
        400,
        { param: 'messages[2].content[0]', code: 'unsupported_content' },
      ],
      [
        client(keys.bob).chat.completions.create({
          model: 'conclave/council',
          messages: [{ role: 'assistant', content: 'I go last' }],
        }),
        400,
        { param: 'messages[0].role' },
      ],
      [
        client(keys.bob).chat.completions.create({
          model: 'conclave/council',
          messages,
          tools: [{ type: 'function', function: { name: 'lookup', parameters: {} } }],
        }),
        400,
        { param: 'tools', code: 'unsupported_parameter' },
      ],
      [
        client(keys.bob).chat.completions.create({ model: 'conclave/vote', messages, n: 3 }),
        400,
        { param: 'n', code: 'unsupported_parameter' },
      ],
      [
        client(keys.bob).chat.completions.create({
          model: 'conclave/council',
          messages: [{ role: 'user', content: 'x'.repeat(20_001) }],
        }),
        400,
        { param: 'messages[0].content' },
      ],
    ];
    for (const [call, status, error] of cases) {
      const refused = await refusal(call);
      expect([refused.status, refused.error]).toEqual([status, expect.objectContaining(error)]);
      expect(Object.keys(refused.error as object).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect((refused.error as { message: string }).message).toEqual(expect.any(String));
    }

    // carol spends her requests a minute; then every /v1 request is a 429 with Retry-After.
    let status = 200;
    for (let i = 0; i <= RATE_LIMIT && status !== 429; i++) {
      status = (
        await fetch(`${stack.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${keys.carol}` } })
      ).status;
    }
    expect(status).toBe(429);
    const limited = await refusal(
      client(keys.carol).chat.completions.create({ model: 'conclave/council', messages }),
    );
    expect(limited.status).toBe(429);
    expect(limited.error).toMatchObject({
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      param: null,
    });
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it("refuses hostile input with a 4xx in OpenAI's shape, never a 5xx", async () => {
    const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    const user = (content: unknown) => ({ model: 'conclave/council', messages: [{ role: 'user', content }] });
    const raw: [string, string, number][] = [
      ['invalid JSON', '{"model": "conclave/council", "messages": [', 400],
      ['a JSON array', '[1, 2, 3]', 400],
      ['a JSON string', '"hello"', 400],
      ['nested 5000 deep', `{"model": "conclave/council", "messages": ${nested(5000)}}`, 400],
      ['oversized', JSON.stringify(user('x'.repeat(300_000))), 413],
      ['a __proto__ key', '{"model": "conclave/council", "__proto__": {"admin": true}, "messages": []}', 400],
    ];
    const bodies: [string, unknown][] = [
      ['no model', { messages: [{ role: 'user', content: 'hi' }] }],
      ['model of the wrong type', { model: 5, messages: [{ role: 'user', content: 'hi' }] }],
      ['a preset name that cannot be one', { ...user('hi'), model: 'conclave/preset/../../etc' }],
      ['messages a string', { model: 'conclave/council', messages: 'hi' }],
      ['messages empty', { model: 'conclave/council', messages: [] }],
      ['a null message', { model: 'conclave/council', messages: [null] }],
      ['content a number', user(5)],
      ['content parts of the wrong shape', user([{ type: 'text', text: 7 }])],
      ['an audio part', user([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }])],
      ['a NUL character', user('hello\u0000world')],
      ['an unpaired surrogate', user('broken \ud800 text')],
      ['an empty question', user('   ')],
      ['an unknown role', { model: 'conclave/council', messages: [{ role: 'wizard', content: 'hi' }] }],
      [
        'a tool message',
        { model: 'conclave/council', messages: [{ role: 'tool', content: 'x', tool_call_id: 'a' }] },
      ],
      [
        'an unknown message field',
        { model: 'conclave/council', messages: [{ role: 'user', content: 'hi', mood: 1 }] },
      ],
      ['an unknown parameter', { ...user('hi'), frobnicate: true }],
      ['stream of the wrong type', { ...user('hi'), stream: 'yes' }],
      ['stream_options without stream', { ...user('hi'), stream_options: { include_usage: true } }],
      ['temperature of the wrong type', { ...user('hi'), temperature: 'hot' }],
      ['logprobs', { ...user('hi'), logprobs: true }],
      ['a JSON response format', { ...user('hi'), response_format: { type: 'json_object' } }],
      [
        'too many messages',
        { model: 'conclave/council', messages: Array(2001).fill({ role: 'user', content: 'a' }) },
      ],
      [
        'jury content beyond its limit',
        { model: 'conclave/jury', messages: [{ role: 'user', content: 'y'.repeat(200_001) }] },
      ],
    ];
    const send = (body: string) =>
      fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.dave}`, 'content-type': 'application/json' },
        body,
      });
    const answers: [string, number, unknown][] = [];
    for (const [what, body, status] of raw) {
      const response = await send(body);
      answers.push([what, response.status, await response.json()]);
      expect([what, response.status]).toEqual([what, status]);
    }
    for (const [what, body] of bodies) {
      const response = await send(JSON.stringify(body));
      answers.push([what, response.status, await response.json()]);
    }
    for (const [what, status, body] of answers) {
      expect([what, status >= 400 && status < 500]).toEqual([what, true]);
      const error = (body as { error?: Record<string, unknown> }).error ?? {};
      expect([what, Object.keys(body as object), Object.keys(error).sort()]).toEqual([
        what,
        ['error'],
        ['code', 'message', 'param', 'type'],
      ]);
      expect([what, typeof error.message, typeof error.type]).toEqual([what, 'string', 'string']);
      for (const field of [error.param, error.code])
        expect([what, field === null || typeof field === 'string']).toEqual([what, true]);
      expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|postgres|redis|at .*\.ts:\d+/i);
    }
    // A path Conclave does not serve under /v1 is a 404 in OpenAI's shape too.
    for (const [method, path] of [
      ['POST', '/v1/embeddings'],
      ['GET', '/v1/models/conclave%2Fcouncil/extra'],
      ['POST', '/v1/completions'],
    ] as const) {
      const response = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${keys.dave}`, 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect([path, response.status]).toEqual([path, 404]);
      const body = (await response.json()) as { error?: Record<string, unknown> };
      expect([path, Object.keys(body), Object.keys(body.error ?? {}).sort()]).toEqual([
        path,
        ['error'],
        ['code', 'message', 'param', 'type'],
      ]);
    }
    // Nothing hostile started a deliberation.
    const conversations = await stack.api<unknown[]>('GET', '/api/conversations', { token: keys.dave });
    expect(conversations.body).toEqual([]);
  });
});

describe('the OpenAI-compatible endpoint in single-user mode', () => {
  const stack = new TestStack({ AUTH_MODE: 'none' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('needs no key: any key a client insists on sending is accepted', async () => {
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: 'anything', maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toContain('conclave/council');
    const answer = (await client.chat.completions.create({
      model: 'conclave/council',
      messages: [{ role: 'user', content: 'Single-user mode?' }],
    })) as Answer;
    expect(answer.choices[0].message.content).toEqual(expect.any(String));
    expect(answer.conclave.status).toBe('complete');
  });
});

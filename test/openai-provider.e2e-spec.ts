import type { CouncilResult, DeliberationView } from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider, RetryingProvider } from '@conclave/llm';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';

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

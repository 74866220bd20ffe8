import type { DeliberationView, DeliveredEvent } from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider, RetryingProvider } from '@conclave/llm';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';

/**
 * Streams that go wrong inside a real deliberation, watched live: an error inside a 200 stream
 * after part of the answer was shown, and a stream that stalls past the call's timeout. Each is a
 * failed call handled by the mode's rules; a call that has shown text is not retried.
 */
const lastUser = (messages: unknown[]) =>
  [...(messages as { role: string; content: string }[])].reverse().find((m) => m.role === 'user')?.content ??
  '';

/** A Stage 1 request (not a ranking, synthesis or title prompt). */
const answering = (messages: unknown[]) => {
  const prompt = lastUser(messages);
  return (
    !prompt.includes(RANKING_PROMPT_MARKER) &&
    !prompt.includes(SYNTHESIS_PROMPT_MARKER) &&
    !prompt.startsWith('Generate a brief title')
  );
};

function script({ request }: ScriptContext): ChatBehaviour {
  const prompt = lastUser(request.messages);
  if (prompt.startsWith('Generate a brief title')) return { kind: 'success', content: 'A title' };
  if (prompt.includes(RANKING_PROMPT_MARKER)) {
    return { kind: 'success', content: 'Fine.\n\nFINAL RANKING:\n1. Response A' };
  }
  if (prompt.includes(SYNTHESIS_PROMPT_MARKER)) return { kind: 'success', content: 'The synthesis.' };
  if (request.model === 'local/breaks') {
    return { kind: 'stream-error', code: 502, message: 'upstream died', afterChunks: 3 };
  }
  if (request.model === 'local/stalls') return { kind: 'stream-stall', afterChunks: 2 };
  return {
    kind: 'success',
    content: `A streamed answer from ${request.model} in several pieces.`,
    chunks: 6,
    chunkDelayMs: 40,
  };
}

describe('streams that fail inside a deliberation', () => {
  let server: ChatCompletionsServer;
  const stack = new TestStack({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', MODEL_TIMEOUT_MS: '1500' });

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    const provider = new RetryingProvider(
      new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'test-key' }),
      { policy: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200 } },
    );
    await stack.start({ realProvider: provider });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  /** The live text of one participant's call in one stage (later stages stream too). */
  const deltasOf = (events: DeliveredEvent[], participant: string, stage = 'stage1') =>
    events
      .filter(
        (e) =>
          (e.type === 'model_delta' || e.type === 'model_partial') &&
          e.participant === participant &&
          e.stage === stage,
      )
      .map((e) => String(e.text))
      .join('');

  it('an error inside a 200 stream after text was shown fails that call once, unretried; the council goes on', async () => {
    const { messageId } = await stack.deliberate({
      question: 'Stream it',
      councilModels: ['local/alpha', 'local/beta', 'local/breaks'],
      chairmanModel: 'local/chair',
    });
    const events = await stack.follow(messageId, { deltas: true });
    expect(events.at(-1)?.type).toBe('complete');
    const failed = events.find(
      (e) => e.type === 'model_progress' && e.participant === 'local/breaks' && e.state === 'failed',
    );
    expect(failed?.error).toMatch(/Error in response body from the openai-compatible provider/);
    expect(JSON.stringify(events)).not.toContain('upstream died');
    // shown, then failed; never retried (a retry would show a second answer after the first)
    expect(
      events.some(
        (e) => e.type === 'model_progress' && e.participant === 'local/breaks' && e.state === 'retrying',
      ),
    ).toBe(false);
    expect(server.requests.filter((r) => r.model === 'local/breaks' && answering(r.messages))).toHaveLength(
      1,
    );
    // the healthy model's streamed text is its stored answer
    const alpha = events.find(
      (e) => e.type === 'model_progress' && e.participant === 'local/alpha' && e.state === 'succeeded',
    );
    expect(deltasOf(events, 'local/alpha')).toBe(alpha?.content);
    const { body: view } = await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`);
    expect(view.calls.find((c) => c.model === 'local/breaks')).toMatchObject({ ok: false, stage: 'stage1' });
  });

  it('a stream that stalls past the call timeout is a timed-out call; the council goes on', async () => {
    const started = Date.now();
    const { messageId } = await stack.deliberate({
      question: 'Stall it',
      councilModels: ['local/alpha', 'local/beta', 'local/stalls'],
      chairmanModel: 'local/chair',
    });
    const events = await stack.follow(messageId, { deltas: true });
    expect(events.at(-1)?.type).toBe('complete');
    const failed = events.find(
      (e) => e.type === 'model_progress' && e.participant === 'local/stalls' && e.state === 'failed',
    );
    expect(failed?.error).toBe('timed out');
    expect(Number(failed?.responseTimeMs)).toBeGreaterThanOrEqual(1400);
    expect(Date.now() - started).toBeLessThan(15_000);
    const stalled = server.requests.filter((r) => r.model === 'local/stalls' && answering(r.messages));
    expect(stalled).toHaveLength(1);
    // the worker let go of the connection when the call timed out
    await expect(stalled[0].settled).resolves.toBe('client-disconnected');
    expect(deltasOf(events, 'local/stalls').length).toBeGreaterThan(0);
    const { body: view } = await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`);
    expect(view.status).toBe('complete');
  });
});

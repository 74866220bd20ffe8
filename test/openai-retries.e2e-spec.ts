import type { ChildProcess } from 'node:child_process';
import type { DeliberationView } from '@conclave/contracts';
import { finalTextOf, type AnyResult } from '@conclave/outcomes';
import { hashApiKey } from '@conclave/persistence';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { graceExpiredReason } from '../apps/gateway/src/openai/retry-grace';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * Safe retries on /v1 (issue 32 §4), on the real stack with the official `openai` SDK: with an
 * Idempotency-Key a client that goes away leaves its deliberation running for V1_RETRY_GRACE_MS, and
 * a retry with the same key and body (on this gateway or another) reattaches, streaming or not;
 * nobody coming back cancels it; without a key a disconnect cancels at once.
 */

interface ConclaveInfo {
  messageId: string;
  status: string;
  preset: string | null;
}
type Answer = ChatCompletion & {
  conclave: ConclaveInfo;
  choices: (ChatCompletion.Choice & { message: { reasoning_content?: string } })[];
};
type Delta = ChatCompletionChunk.Choice.Delta & { reasoning_content?: string };

const GRACE_MS = 2_000;
/** V1_RETRY_GRACE_MS=2000: each gateway renews and sweeps every 500 ms, renewals hold 1.5 s more. */
const TICK_MS = 500;
const LEASE_MS = 1_500;

const idOf = (chunk: ChatCompletionChunk) => chunk.id.replace(/^chatcmpl-/, '');

describe('safe retries on /v1 with an Idempotency-Key', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    V1_RETRY_GRACE_MS: String(GRACE_MS),
    // A revocation made in PostgreSQL alone is found within this.
    STREAM_KEY_RECHECK_MS: '200',
  });
  /** A second gateway replica (its own process) on the same database and Redis. */
  let other: { child: ChildProcess; baseUrl: string };

  const client = (key: string, baseUrl = stack.baseUrl) =>
    new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  const view = async (key: string, messageId: string) => {
    const response = await stack.api<DeliberationView<AnyResult>>('GET', `/api/deliberations/${messageId}`, {
      token: key,
    });
    expect(response.status).toBe(200);
    return response.body;
  };
  const ended = async (key: string, messageId: string, timeoutMs = 30_000) => {
    for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(100)) {
      const current = await view(key, messageId);
      if (['complete', 'failed', 'cancelled'].includes(current.status)) return current;
    }
    throw new Error(`deliberation ${messageId} did not end`);
  };
  /** The first assistant message of the user's only conversation, once it exists. */
  const onlyDeliberation = async (key: string): Promise<string> => {
    for (let i = 0; i < 200; i++) {
      const list = await stack.api<{ id: string }[]>('GET', '/api/conversations', { token: key });
      if (list.body.length > 0) {
        const conversation = await stack.api<{ messages: { id: string; role: string }[] }>(
          'GET',
          `/api/conversations/${list.body[0].id}`,
          { token: key },
        );
        const id = conversation.body.messages.find((m) => m.role === 'assistant')?.id;
        if (id) return id;
      }
      await sleep(50);
    }
    throw new Error('no deliberation started');
  };
  /** What the user was billed for: every model call of every deliberation of theirs, by stage. */
  const callsOf = async (key: string) => {
    const conversations = await stack.api<{ id: string }[]>('GET', '/api/conversations', { token: key });
    const rows: { stage: string; calls: number }[] = await stack.db.query(
      `SELECT c.stage, count(*)::int AS calls FROM model_calls c JOIN messages m ON m.id = c.message_id
        WHERE m.conversation_id = ANY($1::uuid[]) GROUP BY c.stage ORDER BY c.stage`,
      [conversations.body.map((c) => c.id)],
    );
    return {
      conversations: conversations.body.length,
      byStage: Object.fromEntries(rows.map((r) => [r.stage, r.calls])),
    };
  };
  const hasEvent = async (messageId: string, type: string): Promise<boolean> => {
    const rows: unknown[] = await stack.db.query(
      'SELECT 1 FROM deliberation_events WHERE message_id = $1 AND type = $2',
      [messageId, type],
    );
    return rows.length > 0;
  };
  /** Reads a stream until `until` holds for what arrived so far, then drops the connection. */
  const readThenDrop = async (
    stream: AsyncIterable<ChatCompletionChunk>,
    controller: AbortController,
    until: (chunks: ChatCompletionChunk[]) => boolean,
  ): Promise<ChatCompletionChunk[]> => {
    const chunks: ChatCompletionChunk[] = [];
    try {
      for await (const chunk of stream) {
        chunks.push(chunk);
        if (until(chunks)) controller.abort();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    expect(controller.signal.aborted).toBe(true);
    return chunks;
  };
  const reasoningOf = (chunks: ChatCompletionChunk[]) =>
    chunks.map((c) => (c.choices[0]?.delta as Delta | undefined)?.reasoning_content ?? '').join('');
  const contentOf = (chunks: ChatCompletionChunk[]) =>
    chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  const collect = async (stream: AsyncIterable<ChatCompletionChunk>) => {
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return chunks;
  };
  const refusal = async (call: Promise<unknown>): Promise<APIError> => {
    try {
      await call;
    } catch (error) {
      if (error instanceof APIError) return error;
      throw error;
    }
    throw new Error('expected the call to be refused');
  };
  const user = (name: string) => stack.createUser(name);
  const savePreset = async (key: string, preset: Record<string, unknown>) => {
    const response = await stack.api('POST', '/api/presets', { token: key, body: preset });
    expect([200, 201]).toContain(response.status);
  };
  /** A two-member council that takes ~3 s: 1.5 s answers, a synthesis written over 1.5 s. */
  const PACED = {
    name: 'paced',
    mode: 'council',
    councilModels: ['sim/a:delay1500@answer', 'sim/b:delay1500@answer'],
    chairmanModel: 'sim/chair:delay1500@synthesis',
  };
  /** One that nobody waits out: the answers take 30 s. */
  const SLOW = {
    name: 'slow',
    mode: 'council',
    councilModels: ['sim/s1:delay30000@answer', 'sim/s2:delay30000@answer'],
    chairmanModel: 'sim/chair',
  };
  const ask = (content: string, preset = 'paced') => ({
    model: `conclave/preset/${preset}`,
    messages: [{ role: 'user' as const, content }],
  });
  /** The user, with both presets saved. */
  const newUser = async (name: string) => {
    const key = await user(name);
    await savePreset(key, PACED);
    await savePreset(key, SLOW);
    return key;
  };

  beforeAll(async () => {
    await stack.start();
    other = await stack.spawnGateway();
  }, 90_000);
  afterAll(async () => {
    await stack.stop();
  });

  it('a streaming retry with the same key reattaches: the role, every progress line from the start, the final text live, one deliberation billed', async () => {
    const key = await newUser('streaming');
    const headers = { 'Idempotency-Key': 'retry-stream-1' };
    const request = { ...ask('Should we keep the monolith?'), stream: true as const };
    const controller = new AbortController();
    const first = await readThenDrop(
      await client(key).chat.completions.create(request, { headers, signal: controller.signal }),
      controller,
      (chunks) => reasoningOf(chunks).includes('Stage 1'),
    );
    const messageId = idOf(first[0]);
    // The run goes on without its client, past the point where it would have been cancelled.
    await sleep(500);
    expect((await view(key, messageId)).status).not.toBe('cancelled');
    for (let i = 0; i < 100 && !(await hasEvent(messageId, 'stage3_start')); i++) await sleep(50);
    expect(await hasEvent(messageId, 'stage3_start')).toBe(true);

    // Back while the chairman writes: the stream starts over from the run's stored events, then goes live.
    const chunks = await collect(await client(key).chat.completions.create(request, { headers }));
    expect(chunks.every((c) => c.id === `chatcmpl-${messageId}`)).toBe(true);
    expect(chunks[0].choices[0].delta).toMatchObject({ role: 'assistant' });
    const reasoning = reasoningOf(chunks);
    for (const line of [
      'Stage 1: each council member answers the question.',
      'sim/a:delay1500@answer answered',
      'Stage 3: the chairman writes the synthesis.',
    ]) {
      expect(reasoning).toContain(line);
    }
    const stored = await ended(key, messageId);
    expect(stored.status).toBe('complete');
    expect(contentOf(chunks)).toBe(finalTextOf(stored));
    // Part of the synthesis arrived as it was written, not all at the end.
    expect(chunks.filter((c) => c.choices[0]?.delta?.content).length).toBeGreaterThan(1);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason) as ChatCompletionChunk & {
      conclave: ConclaveInfo;
    };
    expect(finish.conclave).toMatchObject({ messageId, status: 'complete', preset: 'paced' });

    // Once it has ended, the same key answers at once: the same completion a first request gets.
    const again = (await client(key).chat.completions.create(ask('Should we keep the monolith?'), {
      headers,
    })) as Answer;
    expect(again.conclave.messageId).toBe(messageId);
    expect(again.choices[0].message.content).toBe(finalTextOf(stored));
    expect(again.choices[0].message.reasoning_content).toBe(reasoning);

    // One deliberation, each call once: two answers, two rankings, one synthesis, the title.
    expect(await callsOf(key)).toEqual({
      conversations: 1,
      byStage: { stage1: 2, stage2: 2, stage3: 1, title: 1 },
    });
  });

  it('a non-streaming retry on another gateway waits for the run and answers it; billed once', async () => {
    const key = await newUser('waiting');
    const headers = { 'Idempotency-Key': 'retry-wait-1' };
    const request = ask('Is a rewrite ever worth it?');
    const controller = new AbortController();
    const pending = client(key).chat.completions.create(request, { headers, signal: controller.signal });
    pending.catch(() => undefined);
    const messageId = await onlyDeliberation(key);
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    await sleep(300);

    const answer = (await client(key, other.baseUrl).chat.completions.create(request, { headers })) as Answer;
    expect(answer.conclave.messageId).toBe(messageId);
    expect(answer.conclave.status).toBe('complete');
    const stored = await view(key, messageId);
    expect(answer.choices[0].message.content).toBe(finalTextOf(stored));
    expect(answer.choices[0].message.reasoning_content).toContain('Stage 1: each council member answers');
    expect(await callsOf(key)).toEqual({
      conversations: 1,
      byStage: { stage1: 2, stage2: 2, stage3: 1, title: 1 },
    });
  });

  it("the SDK's own retries after its timeout reattach too, when the request carries a key", async () => {
    const key = await newUser('impatient');
    // Each attempt gives up after 2 s; the council takes about 3 s: the second attempt gets the answer.
    const impatient = new OpenAI({
      baseURL: `${stack.baseUrl}/v1`,
      apiKey: key,
      maxRetries: 3,
      timeout: 2_000,
    });
    const started = Date.now();
    const answer = (await impatient.chat.completions.create(ask('Worth the wait?'), {
      headers: { 'Idempotency-Key': 'retry-sdk-1' },
    })) as Answer;
    // The first attempt timed out.
    expect(Date.now() - started).toBeGreaterThan(2_000);
    expect(answer.conclave.status).toBe('complete');
    expect(answer.choices[0].message.content).toBe(finalTextOf(await view(key, answer.conclave.messageId)));
    expect(await callsOf(key)).toEqual({
      conversations: 1,
      byStage: { stage1: 2, stage2: 2, stage3: 1, title: 1 },
    });
  });

  it('nobody coming back within the grace: the run is cancelled, saying why, and a late retry gets 409', async () => {
    const key = await newUser('gone');
    const headers = { 'Idempotency-Key': 'retry-never-1' };
    const request = { ...ask('Asked and abandoned', 'slow'), stream: true as const };
    const controller = new AbortController();
    const first = await readThenDrop(
      await client(key).chat.completions.create(request, { headers, signal: controller.signal }),
      controller,
      (chunks) => reasoningOf(chunks).includes('Stage 1'),
    );
    const messageId = idOf(first[0]);
    const droppedAt = Date.now();
    await sleep(GRACE_MS - 600);
    expect((await view(key, messageId)).status).toBe('running');
    const stopped = await ended(key, messageId, 10_000);
    const after = Date.now() - droppedAt;
    expect(stopped.status).toBe('cancelled');
    expect(stopped.error).toBe(graceExpiredReason(GRACE_MS));
    expect(after).toBeGreaterThanOrEqual(GRACE_MS - 100);
    expect(after).toBeLessThan(GRACE_MS + 2 * TICK_MS + 1_500);

    const late = await refusal(
      client(key).chat.completions.create({ ...request, stream: false }, { headers }),
    );
    expect(late.status).toBe(409);
    expect(late.code).toBe('deliberation_cancelled');
    expect(late.message).toContain(graceExpiredReason(GRACE_MS));
  });

  it('without a key a disconnect still cancels at once', async () => {
    const key = await newUser('keyless');
    const controller = new AbortController();
    const first = await readThenDrop(
      await client(key).chat.completions.create(
        { ...ask('Nobody will retry this', 'slow'), stream: true },
        { signal: controller.signal },
      ),
      controller,
      (chunks) => reasoningOf(chunks).includes('Stage 1'),
    );
    const droppedAt = Date.now();
    const stopped = await ended(key, idOf(first[0]), 10_000);
    expect(stopped.status).toBe('cancelled');
    expect(stopped.error).toBe('Cancelled by the user.');
    expect(Date.now() - droppedAt).toBeLessThan(GRACE_MS);
  });

  it('a revoked key ends its request and cancels the run at once, key or not: nobody can retry with it', async () => {
    const key = await newUser('revoked');
    const stream = await client(key).chat.completions.create(
      { ...ask('Asked just before the key is revoked', 'slow'), stream: true },
      { headers: { 'Idempotency-Key': 'retry-revoked-1' } },
    );
    const chunks: ChatCompletionChunk[] = [];
    let revokedAt = 0;
    const error = await refusal(
      (async () => {
        for await (const chunk of stream) {
          chunks.push(chunk);
          if (!revokedAt && reasoningOf(chunks).includes('Stage 1')) {
            revokedAt = Date.now();
            await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1', [
              hashApiKey(key),
            ]);
          }
        }
      })(),
    );
    expect(error.code).toBe('invalid_api_key');
    const messageId = idOf(chunks[0]);
    // The key is revoked: read the stored message directly.
    let stopped: { status: string; error: string | null } = { status: '', error: null };
    for (let i = 0; i < 100 && stopped.status !== 'cancelled'; i++) {
      [stopped] = await stack.db.query('SELECT status, error FROM messages WHERE id = $1', [messageId]);
      if (stopped.status !== 'cancelled') await sleep(20);
    }
    expect(stopped).toEqual({ status: 'cancelled', error: 'Cancelled by the user.' });
    expect(Date.now() - revokedAt).toBeLessThan(GRACE_MS);
  });

  it('the same key with another request is refused as before, and the run it started is left alone', async () => {
    const key = await newUser('reuser');
    const headers = { 'Idempotency-Key': 'retry-other-1' };
    const controller = new AbortController();
    const first = await readThenDrop(
      await client(key).chat.completions.create(
        { ...ask('The first question'), stream: true },
        { headers, signal: controller.signal },
      ),
      controller,
      (chunks) => chunks.length > 0,
    );
    const refused = await refusal(client(key).chat.completions.create(ask('Another question'), { headers }));
    expect(refused.status).toBe(422);
    expect(refused.code).toBe('idempotency_key_reused');
    // Its own retry still reattaches.
    const answer = (await client(key).chat.completions.create(ask('The first question'), {
      headers,
    })) as Answer;
    expect(answer.conclave.messageId).toBe(idOf(first[0]));
    expect(answer.conclave.status).toBe('complete');
  });

  it('a run that failed while its client was away answers the retry with the same error as the first request would', async () => {
    const key = await newUser('failing');
    await savePreset(key, { ...PACED, name: 'failing-chair', chairmanModel: 'sim/chair:fail@synthesis' });
    const headers = { 'Idempotency-Key': 'retry-failed-1' };
    const request = ask('Will the chairman manage?', 'failing-chair');
    const controller = new AbortController();
    const first = await readThenDrop(
      await client(key).chat.completions.create(
        { ...request, stream: true },
        { headers, signal: controller.signal },
      ),
      controller,
      (chunks) => chunks.length > 0,
    );
    const messageId = idOf(first[0]);
    expect((await ended(key, messageId)).status).toBe('failed');

    const refused = await refusal(client(key).chat.completions.create(request, { headers }));
    expect(refused.status).toBe(502);
    expect(refused.code).toBe('deliberation_failed');
    expect(refused.message).toContain(messageId);
    // Streaming, the same error object arrives after the role chunk.
    const streamed = await refusal(
      collect(await client(key).chat.completions.create({ ...request, stream: true }, { headers })),
    );
    expect(streamed.code).toBe('deliberation_failed');
    expect(refused.message).toBe(`502 ${streamed.message}`);
  });

  // Last: it kills the second gateway.
  it('a gateway that dies under its client: the run is cancelled by another after the lease and the grace', async () => {
    const key = await newUser('orphan');
    const doomed = other;
    const stream = await client(key, doomed.baseUrl).chat.completions.create(
      { ...ask('Asked of a gateway about to die', 'slow'), stream: true },
      { headers: { 'Idempotency-Key': 'retry-orphan-1' } },
    );
    const chunks: ChatCompletionChunk[] = [];
    try {
      for await (const chunk of stream) {
        chunks.push(chunk);
        if (reasoningOf(chunks).includes('Stage 1')) doomed.child.kill('SIGKILL');
      }
    } catch {
      // The connection died with its gateway.
    }
    expect(doomed.child.killed).toBe(true);
    const messageId = idOf(chunks[0]);
    const killedAt = Date.now();
    await sleep(GRACE_MS - 200);
    expect((await view(key, messageId)).status).toBe('running');
    const stopped = await ended(key, messageId, 15_000);
    expect(stopped.status).toBe('cancelled');
    expect(stopped.error).toBe(graceExpiredReason(GRACE_MS));
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + GRACE_MS + 2 * TICK_MS + 2_000);
  });
});

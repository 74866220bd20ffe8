import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { BatchAccepted, BatchView, DeliberationView } from '@conclave/contracts';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider } from '@conclave/llm';
import { ADMIN_CANCEL_REASON, KEY_REVOKED_REASON } from '@conclave/persistence';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';
import { eventually, sleep } from './support/wait';

/**
 * Issue 32, "revocation stops the work": revoking a key cancels what it started (batches, and
 * deliberations from every interface) through the cancel path, so partial results stay; an admin
 * cancels all of a user's work. Models are the local OpenAI-compatible stand-in, so that every
 * call's arrival and how it ended (answered, or abandoned by an abort) are recorded.
 */
const ROOT = path.resolve(__dirname, '..');
const COUNCIL = { councilModels: ['local/alpha', 'local/beta'], chairmanModel: 'local/chair' };

function lastUserContent(messages: unknown[]): string {
  const user = [...(messages as { role: string; content: string }[])]
    .reverse()
    .find((m) => m.role === 'user');
  return user?.content ?? '';
}

/**
 * A question's markers decide how its calls behave: SLOWER answers after 10 s (longer than a loaded host takes to start the revoking command), SLOW after 1.5 s,
 * HANG makes local/beta never answer (alpha answers at once); anything else answers in 20 ms.
 */
/** Whether calls for questions marked OUTAGE fail (so that a batch has failed items to retry). */
let outage = true;

function script({ request }: ScriptContext): ChatBehaviour {
  const prompt = lastUserContent(request.messages);
  if (outage && prompt.includes('OUTAGE')) return { kind: 'http-error', status: 400, message: 'outage' };
  const title = prompt.startsWith('Generate a brief title');
  if (prompt.includes('HANG') && request.model === 'local/beta' && !title) return { kind: 'hang' };
  const content = prompt.includes(RANKING_PROMPT_MARKER)
    ? 'Thoughts.\n\nFINAL RANKING:\n1. Response B\n2. Response A'
    : prompt.includes(SYNTHESIS_PROMPT_MARKER)
      ? 'The synthesis.'
      : title
        ? 'A Title'
        : `answer of ${request.model}`;
  const delayMs = prompt.includes('SLOWER') ? 10_000 : prompt.includes('SLOW') ? 1500 : 20;
  return { kind: 'success', content, promptTokens: 10, completionTokens: 5, cost: 0.001, delayMs };
}

interface MessageRow {
  id: string;
  status: string;
  error: string | null;
  completed_at: Date | null;
  api_key_id: string | null;
}

describe('revoking a key stops its work; an admin stops a user’s work', () => {
  let server: ChatCompletionsServer;
  // OPENAI_BASE_URL marks a real provider as configured; the worker's provider is the stand-in.
  const stack = new TestStack({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', AUTH_MODE: 'apikey' });
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    await stack.start({
      realProvider: new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'k' }),
    });
  }, 60_000);
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await stack.stop();
    await server.close();
  });

  const keyIdOf = async (key: string): Promise<string> =>
    (
      (await stack.db.query('SELECT id FROM api_keys WHERE key_prefix = $1', [key.slice(0, 8)])) as {
        id: string;
      }[]
    )[0].id;
  const message = async (id: string): Promise<MessageRow> =>
    (
      (await stack.db.query(
        'SELECT id, status, error, completed_at, api_key_id FROM messages WHERE id = $1',
        [id],
      )) as MessageRow[]
    )[0];
  const requestsFor = (marker: string): RecordedChatRequest[] =>
    server.requests.filter((r) => JSON.stringify(r.messages).includes(marker));
  const lastEvent = async (messageId: string) =>
    (
      (await stack.db.query(
        'SELECT type, payload FROM deliberation_events WHERE message_id = $1 ORDER BY seq DESC LIMIT 1',
        [messageId],
      )) as { type: string; payload: Record<string, unknown> }[]
    )[0];
  const cli = (script: string, args: string[], env: Record<string, string> = {}) =>
    promisify(execFile)(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', script, ...args],
      { cwd: ROOT, env: { ...process.env, ...stack.env, ...env } },
    );
  const submitBatch = async (token: string, marker: string, items: number, concurrency: number) => {
    const { status, body } = await stack.api<BatchAccepted>('POST', '/api/batches', {
      token,
      body: {
        defaults: { mode: 'council', ...COUNCIL },
        items: Array.from({ length: items }, (_, i) => ({ question: `${marker} item ${i}` })),
        concurrency,
      },
    });
    expect(status).toBe(202);
    return body.batchId;
  };
  const itemsOf = async (batchId: string): Promise<MessageRow[]> =>
    stack.db.query(
      `SELECT id, status, error, completed_at, api_key_id FROM messages
       WHERE batch_id = $1 AND role = 'assistant' ORDER BY batch_index`,
      [batchId],
    );
  async function mcpClient(token: string): Promise<Client> {
    const client = new Client({ name: 'conclave-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  it('records the key on the work each interface starts', async () => {
    const key = await stack.createUser('recorder');
    const keyId = await keyIdOf(key);
    const rest = await stack.deliberate({ question: 'Recorded over REST', ...COUNCIL }, key);
    const socket = await stack.connect(key);
    const overSocket = await socket.emitWithAck('deliberate', {
      question: 'Recorded over Socket.IO',
      ...COUNCIL,
    });
    const mcp = await mcpClient(key);
    const started = (await mcp.callTool({
      name: 'start_deliberation',
      arguments: { question: 'Recorded over MCP', ...COUNCIL },
    })) as { structuredContent?: { messageId?: string } };
    const v1 = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'conclave/council',
        messages: [{ role: 'user', content: 'Recorded over /v1' }],
      }),
    });
    expect(v1.status).toBe(200);
    await v1.text();
    const batchId = await submitBatch(key, 'Recorded batch', 1, 1);

    const messageIds = [rest.messageId, overSocket.messageId, started.structuredContent?.messageId];
    for (const id of messageIds) expect((await message(String(id))).api_key_id).toBe(keyId);
    const [viaV1]: { api_key_id: string }[] = await stack.db.query(
      `SELECT m.api_key_id FROM messages m JOIN messages u ON u.conversation_id = m.conversation_id AND u.role = 'user'
       WHERE m.role = 'assistant' AND u.content LIKE '%Recorded over /v1%'`,
    );
    expect(viaV1.api_key_id).toBe(keyId);
    const [batch]: { api_key_id: string }[] = await stack.db.query(
      'SELECT api_key_id FROM batches WHERE id = $1',
      [batchId],
    );
    expect(batch.api_key_id).toBe(keyId);
  }, 30_000);

  it('cancels the revoked key’s batch mid-run within a second; no call of it starts after; other work goes on', async () => {
    const batchKey = await stack.createUser('alice');
    const otherKey = await stack.createUser('alice'); // a second key of the same user
    const bobKey = await stack.createUser('bob');
    const batchId = await submitBatch(batchKey, 'REVOKE-BATCH SLOWER', 6, 2);
    const otherBatch = await submitBatch(otherKey, 'OTHER-BATCH SLOW', 1, 1);
    const other = await stack.deliberate({ question: 'OTHER-KEY SLOW', ...COUNCIL }, otherKey);
    const bobs = await stack.deliberate({ question: 'BOB SLOW', ...COUNCIL }, bobKey);
    // Two items running, their first calls in flight (each takes 4 s).
    expect(await eventually(() => requestsFor('REVOKE-BATCH').length >= 4, 10_000)).toBe(true);
    const inFlight = requestsFor('REVOKE-BATCH').filter((r) => r.outcome === undefined);
    expect(inFlight.length).toBeGreaterThanOrEqual(4);

    const { stdout } = await stack.revokeKey(batchKey.slice(0, 8));
    const exitedAt = Date.now();
    expect(stdout).toMatch(/revoked 1 key/);
    expect(stdout).toMatch(/cancelled 0 deliberations, 1 batch \(6 items\)/);
    const [{ revoked_at: revokedAt }]: { revoked_at: Date }[] = await stack.db.query(
      'SELECT revoked_at FROM api_keys WHERE key_prefix = $1',
      [batchKey.slice(0, 8)],
    );

    const view = (await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: otherKey })).body;
    expect(view).toMatchObject({ status: 'cancelled', cancelled: 6, complete: 0, queued: 0, running: 0 });
    expect(view.finishedAt).not.toBeNull();
    const items = await itemsOf(batchId);
    expect(items).toHaveLength(6);
    for (const item of items) {
      expect(item).toMatchObject({ status: 'cancelled', error: KEY_REVOKED_REASON });
      // Ended within a second of the revocation (stored by the command itself).
      expect(new Date(item.completed_at!).getTime() - new Date(revokedAt).getTime()).toBeLessThan(1000);
      expect(await lastEvent(item.id)).toEqual({
        type: 'cancelled',
        payload: { reason: KEY_REVOKED_REASON },
      });
      // The reason names what happened, never the key.
      expect(JSON.stringify(item)).not.toContain(batchKey.slice(3, 8));
    }
    // Every call of the batch's that was in flight was aborted (each would have taken 10 s), at
    // once; none started once its item had ended.
    await Promise.all(inFlight.map((r) => r.settled));
    expect(Date.now() - exitedAt).toBeLessThan(1000);
    expect(inFlight.map((r) => r.outcome)).toEqual(inFlight.map(() => 'client-disconnected'));
    const calls = requestsFor('REVOKE-BATCH');
    const endedAt = Math.max(...items.map((i) => new Date(i.completed_at!).getTime()));
    expect(calls.filter((r) => r.receivedAt > endedAt)).toEqual([]);
    await sleep(500);
    expect(requestsFor('REVOKE-BATCH')).toHaveLength(calls.length);

    // The user's other key, and another user, keep working to the end.
    for (const { messageId } of [other, bobs]) {
      expect(await eventually(async () => (await message(messageId)).status === 'complete', 20_000)).toBe(
        true,
      );
    }
    expect(
      await eventually(
        async () =>
          (await stack.api<BatchView>('GET', `/api/batches/${otherBatch}`, { token: otherKey })).body
            .status === 'complete',
        20_000,
      ),
    ).toBe(true);
    expect((await stack.api('GET', '/api/conversations', { token: batchKey })).status).toBe(401);
  }, 60_000);

  it('cancels a running deliberation of the key from REST, Socket.IO and MCP, keeping the answers it had', async () => {
    const key = await stack.createUser('carol');
    const rest = await stack.deliberate({ question: 'DIRECT-REST HANG', ...COUNCIL }, key);
    const socket = await stack.connect(key);
    const overSocket = (await socket.emitWithAck('deliberate', {
      question: 'DIRECT-SOCKET HANG',
      ...COUNCIL,
    })) as {
      messageId: string;
    };
    const mcp = await mcpClient(key);
    const started = (await mcp.callTool({
      name: 'start_deliberation',
      arguments: { question: 'DIRECT-MCP HANG', ...COUNCIL },
    })) as unknown as { structuredContent: { messageId: string } };
    const ids = [rest.messageId, overSocket.messageId, started.structuredContent.messageId];
    // local/alpha has answered each; local/beta hangs.
    const answered = async () => {
      const [{ n }]: { n: number }[] = await stack.db.query(
        `SELECT count(*)::int AS n FROM model_calls WHERE message_id = ANY($1::uuid[]) AND model = 'local/alpha' AND ok`,
        [ids],
      );
      return n === 3;
    };
    expect(await eventually(answered, 10_000)).toBe(true);

    const { stdout } = await stack.revokeKey(key.slice(0, 8));
    expect(stdout).toMatch(/cancelled 3 deliberations, 0 batches \(0 items\)/);
    const hanging = ['DIRECT-REST', 'DIRECT-SOCKET', 'DIRECT-MCP'].flatMap((marker) =>
      requestsFor(marker).filter((r) => r.model === 'local/beta'),
    );
    expect(hanging).toHaveLength(3);
    const outcomes = await Promise.all(hanging.map((r) => r.settled));
    expect(outcomes).toEqual(['client-disconnected', 'client-disconnected', 'client-disconnected']);

    for (const id of ids) {
      expect(await message(id)).toMatchObject({ status: 'cancelled', error: KEY_REVOKED_REASON });
      expect(await lastEvent(id)).toEqual({ type: 'cancelled', payload: { reason: KEY_REVOKED_REASON } });
      // The finished answer's call stays stored (and billed), beside the aborted one.
      const calls: { model: string; ok: boolean; content: string | null }[] = await stack.db.query(
        `SELECT model, ok, content FROM model_calls WHERE message_id = $1 AND stage <> 'title' ORDER BY model`,
        [id],
      );
      expect(calls).toEqual([
        { model: 'local/alpha', ok: true, content: 'answer of local/alpha' },
        expect.objectContaining({ model: 'local/beta', ok: false }),
      ]);
    }
    // The user still reads the cancelled deliberation with another key.
    const otherKey = await stack.createUser('carol');
    const view = await stack.api<DeliberationView>('GET', `/api/deliberations/${rest.messageId}`, {
      token: otherKey,
    });
    expect(view.body).toMatchObject({ status: 'cancelled', error: KEY_REVOKED_REASON });
    expect(view.body.calls).toEqual(
      expect.arrayContaining([expect.objectContaining({ model: 'local/alpha', ok: true })]),
    );
  }, 40_000);

  it('makes a retried batch the retrying key’s: revoking the key that submitted it leaves the retry running', async () => {
    const submitter = await stack.createUser('grace');
    const retrier = await stack.createUser('grace');
    const batchId = await submitBatch(submitter, 'OUTAGE SLOW', 1, 1);
    const finished = async () =>
      (await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: retrier })).body;
    // The retrying key's own reads count against its 600 requests a minute: poll at 4 a second, not
    // 40, or a slow host spends the minute's budget waiting and reads 429s.
    const POLL_MS = 250;
    expect(await eventually(async () => (await finished()).finishedAt !== null, 20_000, POLL_MS)).toBe(true);
    expect(await finished()).toMatchObject({ status: 'complete', failed: 1 });
    outage = false;
    const retried = await stack.api('POST', `/api/batches/${batchId}/retry-failed`, { token: retrier });
    expect(retried.status).toBe(202);
    const [batch]: { api_key_id: string }[] = await stack.db.query(
      'SELECT api_key_id FROM batches WHERE id = $1',
      [batchId],
    );
    expect(batch.api_key_id).toBe(await keyIdOf(retrier));

    const { stdout } = await stack.revokeKey(submitter.slice(0, 8));
    expect(stdout).toMatch(/cancelled 0 deliberations, 0 batches \(0 items\)/);
    await eventually(
      async () => {
        const view = await finished();
        return view.status === 'complete' && view.complete === 1;
      },
      20_000,
      POLL_MS,
    );
    // Said as the batch's state, so that a failure shows whether the retry was stopped or is late.
    expect(await finished()).toMatchObject({ status: 'complete', complete: 1 });
  }, 60_000);

  it("lets an admin cancel all of a user's work over HTTP (others get 401 / 403)", async () => {
    const admin = await stack.createUser('root', 'admin');
    const dave = await stack.createUser('dave');
    const daveSecond = await stack.createUser('dave');
    const erin = await stack.createUser('erin');
    const first = await stack.deliberate({ question: 'DAVE-1 HANG', ...COUNCIL }, dave);
    const second = await stack.deliberate({ question: 'DAVE-2 HANG', ...COUNCIL }, daveSecond);
    const batchId = await submitBatch(dave, 'DAVE-BATCH SLOWER', 3, 1);
    const erins = await stack.deliberate({ question: 'ERIN SLOW', ...COUNCIL }, erin);
    expect(await eventually(() => requestsFor('DAVE-BATCH').length >= 2, 10_000)).toBe(true);

    const url = '/api/admin/users/dave/cancel-work';
    expect((await stack.api('POST', url)).status).toBe(401);
    const refused = await stack.api<{ message: string }>('POST', url, { token: erin });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/admin keys only/);
    expect((await message(first.messageId)).status).not.toBe('cancelled');
    expect((await stack.api('POST', '/api/admin/users/nobody/cancel-work', { token: admin })).status).toBe(
      404,
    );
    expect(
      (await stack.api('POST', '/api/admin/users/bad%20name!/cancel-work', { token: admin })).status,
    ).toBe(404);

    const done = await stack.api('POST', url, { token: admin });
    expect(done).toEqual({
      status: 200,
      body: { user: 'dave', deliberations: 2, batches: 1, batchItems: 3 },
    });
    for (const id of [first.messageId, second.messageId, ...(await itemsOf(batchId)).map((i) => i.id)]) {
      expect(await message(id)).toMatchObject({ status: 'cancelled', error: ADMIN_CANCEL_REASON });
    }
    // Dave's keys still work; Erin's deliberation runs to its end.
    expect((await stack.api('GET', '/api/conversations', { token: dave })).status).toBe(200);
    expect(await eventually(async () => (await message(erins.messageId)).status === 'complete', 20_000)).toBe(
      true,
    );
    // Nothing left to cancel.
    expect((await stack.api('POST', url, { token: admin })).body).toEqual({
      user: 'dave',
      deliberations: 0,
      batches: 0,
      batchItems: 0,
    });
  }, 40_000);

  it('does the same from the command line: npm run user:cancel-work -- --user <name>', async () => {
    const frank = await stack.createUser('frank');
    const run = await stack.deliberate({ question: 'FRANK HANG', ...COUNCIL }, frank);
    expect(await eventually(() => requestsFor('FRANK').length >= 2, 10_000)).toBe(true);
    const { stdout } = await promisify(execFile)(
      'npm',
      ['run', '-s', 'user:cancel-work', '--', '--user', 'frank'],
      {
        cwd: ROOT,
        env: { ...process.env, ...stack.env },
      },
    );
    expect(stdout).toMatch(/user frank: cancelled 1 deliberation, 0 batches \(0 items\)/);
    expect(await message(run.messageId)).toMatchObject({ status: 'cancelled', error: ADMIN_CANCEL_REASON });
    await expect(cli('apps/ops/src/cancel-work.ts', [])).rejects.toMatchObject({ code: 2 });
    await expect(cli('apps/ops/src/cancel-work.ts', ['--user', 'nobody'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('no user named nobody'),
    });
  }, 40_000);
});

describe('revocation without the command reaching Redis', () => {
  let server: ChatCompletionsServer;
  // A short reconcile interval: the workers' backstop is what this tests.
  const stack = new TestStack({
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    AUTH_MODE: 'apikey',
    RECONCILE_INTERVAL_MS: '300',
  });

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    await stack.start({
      realProvider: new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'k' }),
    });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  const status = async (id: string): Promise<string> =>
    ((await stack.db.query('SELECT status FROM messages WHERE id = $1', [id])) as { status: string }[])[0]
      .status;
  const betaCall = (marker: string) =>
    server.requests.find((r) => r.model === 'local/beta' && JSON.stringify(r.messages).includes(marker));

  it('stores the cancel, and the workers abort the calls still running', async () => {
    const key = await stack.createUser('offline');
    const { messageId } = await stack.deliberate({ question: 'OFFLINE HANG', ...COUNCIL }, key);
    expect(await eventually(() => betaCall('OFFLINE') !== undefined, 10_000)).toBe(true);

    const { stdout, stderr } = await stack.revokeKey(key.slice(0, 8), { REDIS_URL: 'redis://127.0.0.1:1' });
    const exitedAt = Date.now();
    expect(stdout).toMatch(/cancelled 1 deliberation/);
    expect(stderr).toMatch(/could not reach Redis/);
    expect(await status(messageId)).toBe('cancelled');
    // No control message reached the worker: its reconciler finds the message cancelled.
    const outcome = await betaCall('OFFLINE')!.settled;
    expect(outcome).toBe('client-disconnected');
    expect(Date.now() - exitedAt).toBeLessThan(2000);
  }, 40_000);

  it('cancels work of a key revoked without the command (or that slipped past it) within the reconcile interval', async () => {
    const key = await stack.createUser('sneaky');
    const { messageId } = await stack.deliberate({ question: 'SNEAKY HANG', ...COUNCIL }, key);
    expect(await eventually(() => betaCall('SNEAKY') !== undefined, 10_000)).toBe(true);
    await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE key_prefix = $1', [key.slice(0, 8)]);
    // The sweep takes keys revoked at least a second ago (the revoking command cancels at once itself).
    expect(await eventually(async () => (await status(messageId)) === 'cancelled', 3000)).toBe(true);
    expect(await betaCall('SNEAKY')!.settled).toBe('client-disconnected');
    const [row]: { error: string }[] = await stack.db.query('SELECT error FROM messages WHERE id = $1', [
      messageId,
    ]);
    expect(row.error).toBe(KEY_REVOKED_REASON);
  }, 40_000);
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { TestStack } from './support/harness';

/**
 * /mcp under abuse, in API-key mode on the real stack: JSON-RPC batches count each message against
 * the request limit and are bounded, bad params answer Invalid Params naming the field, and a
 * session id is only accepted from the key it was issued to.
 */

const REQUESTS_PER_MINUTE = 12;

interface Answer {
  status: number;
  headers: Headers;
  messages: Record<string, unknown>[];
  text: string;
}

describe('MCP abuse (/mcp)', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_REQUESTS_PER_MINUTE: String(REQUESTS_PER_MINUTE),
  });
  const clients: Client[] = [];

  beforeAll(() => stack.start());
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await stack.stop();
  });

  async function post(body: unknown, token: string, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${stack.baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let messages: Record<string, unknown>[] = [];
    if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      messages = text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    } else if (text) {
      const parsed = JSON.parse(text) as Record<string, unknown> | Record<string, unknown>[];
      messages = Array.isArray(parsed) ? parsed : [parsed];
    }
    return { status: response.status, headers: response.headers, messages, text };
  }

  const call = (id: number, method: string, params?: Record<string, unknown>) => ({
    jsonrpc: '2.0',
    id,
    method,
    ...(params ? { params } : {}),
  });
  const batchOf = (n: number, method = 'resources/list') =>
    Array.from({ length: n }, (_, i) => call(i + 1, method));
  const conversations = (token: string) =>
    fetch(`${stack.baseUrl}/api/conversations`, { headers: { authorization: `Bearer ${token}` } });
  const initialize = (token: string) =>
    post(
      call(1, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'abuse', version: '1' },
      }),
      token,
    );

  it('counts each message of a JSON-RPC batch as a request, and answers 429 with Retry-After over the limit', async () => {
    const key = await stack.createUser('batcher');
    const other = await stack.createUser('bystander');
    const first = await post(batchOf(10), key);
    expect(first.status).toBe(200);
    expect(first.messages.map((m) => m.id).sort((a, b) => Number(a) - Number(b))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
    expect(first.messages.every((m) => 'result' in m)).toBe(true);
    // 10 of 12 used: a batch of 3 does not fit, two plain requests do (the refused batch's own POST
    // counted one of them, as any request refused by the limit after its key was checked).
    const refused = await post(batchOf(3), key);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.text).toMatch(/Too many requests: at most 12 a minute/);
    expect((await conversations(key)).status).toBe(200);
    expect((await conversations(key)).status).toBe(429);
    // Another key is not affected.
    expect((await conversations(other)).status).toBe(200);
  });

  it('refuses an over-long batch, an empty one, and any batch under protocol versions without them', async () => {
    const key = await stack.createUser('long-batch');
    const long = await post(batchOf(11), key);
    expect(long.status).toBe(400);
    expect(long.messages[0]).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: ErrorCode.InvalidRequest, message: expect.stringMatching(/at most 10 messages/) },
    });
    const empty = await post([], key);
    expect(empty.status).toBe(400);
    expect(empty.messages[0]).toMatchObject({ error: { code: ErrorCode.InvalidRequest } });
    for (const version of ['2025-06-18', '2025-11-25']) {
      const modern = await post(batchOf(2), key, { 'mcp-protocol-version': version });
      expect(modern.status).toBe(400);
      expect(modern.messages[0]).toMatchObject({
        error: {
          code: ErrorCode.InvalidRequest,
          message: expect.stringContaining(`not part of MCP protocol version ${version}`),
        },
      });
    }
    // One message per POST is answered as always.
    const single = await post(call(1, 'resources/list'), key, { 'mcp-protocol-version': '2025-06-18' });
    expect(single.status).toBe(200);
  });

  it('answers bad params with Invalid Params (-32602) naming the field, without a validator dump', async () => {
    const key = await stack.createUser('sloppy');
    const expectInvalid = async (body: unknown, fields: RegExp[]) => {
      const answer = await post(body, key);
      expect(answer.status).toBeLessThan(500);
      const [message] = answer.messages;
      expect(message).toMatchObject({ id: 7, error: { code: ErrorCode.InvalidParams } });
      const text = (message.error as { message: string }).message;
      for (const field of fields) expect(text).toMatch(field);
      // No zod issue list, no JSON, no value sent.
      expect(text).not.toMatch(/[[{\n]|"code"|invalid_type|secret-value/);
    };
    await expectInvalid(call(7, 'resources/read', {}), [
      /^Invalid params for resources\/read: params\.uri is required$/,
    ]);
    await expectInvalid(call(7, 'resources/read', { uri: 42 }), [/params\.uri must be a string/]);
    await expectInvalid(call(7, 'initialize', { protocolVersion: 'secret-value', capabilities: 'all' }), [
      /^Invalid params for initialize: /,
      /params\.capabilities must be an object/,
      /params\.clientInfo is required/,
    ]);
    await expectInvalid(call(7, 'tools/call', { name: 'deliberate', arguments: 'question?' }), [
      /params\.arguments must be an object/,
    ]);
    // An initialize refused for its params hands out no session.
    const badInit = await post(call(7, 'initialize', {}), key);
    expect(badInit.headers.get('mcp-session-id')).toBeNull();
  });

  it("accepts only the session ids it issued to the caller's key: forged, altered or another user's answer 404", async () => {
    const alice = await stack.createUser('alice');
    const bob = await stack.createUser('bob');
    const aliceInit = await initialize(alice);
    expect(aliceInit.status).toBe(200);
    const session = aliceInit.headers.get('mcp-session-id') ?? '';
    expect(session).not.toBe('');
    expect((await initialize(alice)).headers.get('mcp-session-id')).not.toBe(session);

    const list = call(2, 'tools/list');
    expect((await post(list, alice, { 'mcp-session-id': session })).status).toBe(200);
    // Stateless: a client that sends no session id is answered (only its cancellations cannot be matched).
    expect((await post(list, alice)).status).toBe(200);

    const altered = session.slice(0, -2) + (session.endsWith('AA') ? 'BB' : 'AA');
    const bobSession = (await initialize(bob)).headers.get('mcp-session-id') ?? '';
    for (const [token, forged] of [
      [alice, 'made-up-session'],
      [alice, altered],
      [alice, bobSession],
      [bob, session],
    ]) {
      const answer = await post(list, token, { 'mcp-session-id': forged });
      expect(answer.status).toBe(404);
      expect(answer.messages[0]).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32001, message: expect.stringMatching(/^Session not found/) },
      });
      // A cancellation under someone else's session is refused the same way.
      const cancel = await post(
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } },
        token,
        { 'mcp-session-id': forged },
      );
      expect(cancel.status).toBe(404);
    }

    // The SDK's own client gets a session and keeps using it (another user: Alice's minute is full).
    const carol = await stack.createUser('carol');
    const client = new Client({ name: 'abuse-sdk', version: '1' });
    clients.push(client);
    const transport = new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${carol}` } },
    });
    await client.connect(transport);
    expect(transport.sessionId).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });
});

describe('MCP batches under a request limit smaller than the batch bound', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey', RATE_LIMIT_REQUESTS_PER_MINUTE: '4' });

  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  it('refuses a batch that could never fit in a minute, naming the setting', async () => {
    const key = await stack.createUser('small');
    const post = (n: number) =>
      fetch(`${stack.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${key}`,
        },
        body: JSON.stringify(
          Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'resources/list' })),
        ),
      });
    const tooMany = await post(5);
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toMatchObject({
      error: {
        code: ErrorCode.InvalidRequest,
        message: expect.stringMatching(
          /5 requests, more than the 4 a minute RATE_LIMIT_REQUESTS_PER_MINUTE allows/,
        ),
      },
    });
    // The refused POST counted one; a batch of 3 still fits.
    expect((await post(3)).status).toBe(200);
  });
});

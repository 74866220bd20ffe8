import http from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { BatchView } from '@conclave/contracts';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * Issue 33, items 4 and 5 on the real stack in API-key mode: links in answers never come from the
 * request's Host (or X-Forwarded-*) header, and every route's query parameters are checked like a
 * body (unknown ones, lists and a `defaults` that is not an object are a 400 naming the parameter).
 */

const EVIL = 'evil.example';
/** What an attacker sends to make the gateway link to a site of theirs. */
const HOSTILE = { host: EVIL, 'x-forwarded-host': `fwd.${EVIL}`, 'x-forwarded-proto': 'https' };
const COUNCIL = { mode: 'council', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' };

interface Answer {
  status: number;
  text: string;
  json: () => Record<string, unknown>;
}

function expressRoutes(app: INestApplication): { method: string; path: string }[] {
  type Layer = { route?: { path: string; methods: Record<string, boolean> } };
  const express = app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  return express.router.stack.flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods)
          .filter((m) => m !== '_all')
          .map((m) => ({ method: m.toUpperCase(), path: layer.route!.path }))
      : [],
  );
}

/** A request with any headers (Host included, which fetch would not send as given). */
function sendTo(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, method, path, headers, timeout: 30_000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: response.statusCode ?? 0,
            text,
            json: () => JSON.parse(text) as Record<string, unknown>,
          });
        });
      },
    );
    request.on('error', reject);
    request.on('timeout', () => request.destroy(new Error(`timed out: ${method} ${path}`)));
    request.end(options.body);
  });
}

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const rpc = (id: number, method: string, params: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});

describe('links from the configured address and strict query parameters (API-key mode)', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  });
  let alice = '';
  let admin = '';

  const send = (
    method: string,
    path: string,
    options: { token?: string; body?: string; headers?: Record<string, string> } = {},
  ) => sendTo(stack.baseUrl, method, path, options);

  const hostile = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    send(method, path, {
      token: alice,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: { ...HOSTILE, ...headers },
    });

  const expectNoEvilHost = (answer: Answer) => {
    expect(answer.text.toLowerCase()).not.toContain(EVIL);
  };

  async function batchFinished(batchId: string): Promise<BatchView> {
    for (let i = 0; i < 200; i++) {
      const view = await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: alice });
      if (view.body.status !== 'queued' && view.body.status !== 'running') return view.body;
      await sleep(100);
    }
    throw new Error('batch did not finish');
  }

  beforeAll(async () => {
    await stack.start();
    alice = await stack.createUser('alice');
    admin = await stack.createUser('root', 'admin');
  });
  afterAll(() => stack.stop());

  describe('item 4: the Host header never reaches a link', () => {
    it('/v1 answers (plain, streamed, failed) link to the listening address', async () => {
      const messages = [{ role: 'user', content: 'Where am I linked?' }];
      const plain = await hostile('POST', '/v1/chat/completions', { model: 'conclave/council', messages });
      expect(plain.status).toBe(200);
      expectNoEvilHost(plain);
      const conclave = plain.json().conclave as { url: string; messageId: string };
      expect(conclave.url).toBe(`${stack.baseUrl}/#/m/${conclave.messageId}`);

      const streamed = await hostile('POST', '/v1/chat/completions', {
        model: 'conclave/council',
        messages,
        stream: true,
      });
      expect(streamed.status).toBe(200);
      expect(streamed.text).toContain(`${stack.baseUrl}/#/m/`);
      expectNoEvilHost(streamed);

      // A failed deliberation's error message links it too.
      const preset = await stack.api('POST', '/api/presets', {
        token: alice,
        body: { name: 'failing', ...COUNCIL, chairmanModel: 'sim/c:fail@synthesis' },
      });
      expect(preset.status).toBe(201);
      const failed = await hostile('POST', '/v1/chat/completions', {
        model: 'conclave/preset/failing',
        messages,
      });
      expect(failed.status).toBe(502);
      expect(failed.text).toContain(`${stack.baseUrl}/#/m/`);
      expectNoEvilHost(failed);
    });

    it('MCP results link to the listening address', async () => {
      const mcpHeaders = MCP_HEADERS;
      const init = await hostile(
        'POST',
        '/mcp',
        rpc(1, 'initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'links', version: '1.0.0' },
        }),
        mcpHeaders,
      );
      expect(init.status).toBe(200);
      const call = await hostile(
        'POST',
        '/mcp',
        rpc(2, 'tools/call', { name: 'deliberate', arguments: { question: 'Linked where?', ...COUNCIL } }),
        mcpHeaders,
      );
      expect(call.status).toBe(200);
      expect(call.text).toMatch(new RegExp(`${stack.baseUrl.replace(/\./g, '\\.')}/#/m/[0-9a-f-]{36}`));
      expectNoEvilHost(call);
      const messageId = /#\/m\/([0-9a-f-]{36})/.exec(call.text)![1];
      const get = await hostile(
        'POST',
        '/mcp',
        rpc(3, 'tools/call', { name: 'get_deliberation', arguments: { messageId } }),
        mcpHeaders,
      );
      expect(get.text).toContain(`${stack.baseUrl}/#/m/${messageId}`);
      expectNoEvilHost(get);
    });

    it('batch exports, reports and views carry no link to the Host', async () => {
      const submitted = await hostile('POST', '/api/batches', {
        defaults: COUNCIL,
        items: [{ question: 'One?' }, { question: 'Two?' }],
      });
      expect(submitted.status).toBe(202);
      expectNoEvilHost(submitted);
      const { batchId } = submitted.json() as { batchId: string };
      await batchFinished(batchId);
      for (const path of [
        `/api/batches/${batchId}`,
        `/api/batches/${batchId}/results?format=csv`,
        `/api/batches/${batchId}/results?format=jsonl`,
        `/api/batches/${batchId}/report`,
        `/api/batches/${batchId}/report?format=md`,
      ]) {
        const answer = await hostile('GET', path);
        expect(answer.status).toBe(200);
        expectNoEvilHost(answer);
      }
    });

    it('error answers do not echo the Host either', async () => {
      for (const [method, path] of [
        ['GET', '/api/deliberations/00000000-0000-4000-8000-000000000000'],
        ['GET', '/v1/nowhere'],
        ['POST', '/v1/chat/completions'],
        ['GET', '/api/batches/compare?a=x&b=y'],
      ] as const) {
        const answer = await hostile(
          method,
          path,
          method === 'POST' ? { model: 'conclave/none' } : undefined,
        );
        expect(answer.status).toBeGreaterThanOrEqual(400);
        expectNoEvilHost(answer);
      }
    });
  });

  describe('item 5: query parameters are checked like bodies', () => {
    const invalid = (answer: Answer, parameter: string) => {
      expect(answer.status).toBe(400);
      const body = answer.json();
      expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(Object.keys(body.fields as object)).toContain(parameter);
      expect(body.message).toContain(parameter);
    };

    const batchCount = async () =>
      (await stack.api<BatchView[]>('GET', '/api/batches', { token: alice })).body.length;

    it('defaults=[] on an upload is a 400 naming defaults, and starts nothing', async () => {
      const before = await batchCount();
      for (const defaults of ['%5B%5D', 'null', '%22council%22', '7']) {
        const answer = await send('POST', `/api/batches?mode=council&defaults=${defaults}`, {
          token: alice,
          body: 'question\nWho runs this?\n',
          headers: { 'content-type': 'text/csv' },
        });
        invalid(answer, 'defaults');
      }
      expect(await batchCount()).toBe(before);
    });

    it('format[]=md, a repeated format, or an upload field beside a JSON body is a 400 naming it', async () => {
      const submitted = await stack.api<{ batchId: string }>('POST', '/api/batches', {
        token: alice,
        body: { defaults: COUNCIL, items: [{ question: 'Formats?' }] },
      });
      const { batchId } = submitted.body;
      invalid(await send('GET', `/api/batches/${batchId}/report?format[]=md`, { token: alice }), 'format');
      invalid(
        await send('GET', `/api/batches/${batchId}/report?format=md&format=json`, { token: alice }),
        'format',
      );
      invalid(await send('GET', `/api/batches/${batchId}/results?format[x]=csv`, { token: alice }), 'format');
      const before = await batchCount();
      invalid(
        await send('POST', '/api/batches?mode=jury', {
          token: alice,
          body: JSON.stringify({ defaults: COUNCIL, items: [{ question: 'Which mode?' }] }),
        }),
        'mode',
      );
      expect(await batchCount()).toBe(before);
      // What the web client and the CLI send still works.
      expect((await send('GET', `/api/batches/${batchId}/report?format=md`, { token: alice })).status).toBe(
        200,
      );
      const upload = await send('POST', '/api/batches?mode=council&concurrency=2&generateTitles=false', {
        token: alice,
        body: 'question\nStill fine?\n',
        headers: { 'content-type': 'text/csv' },
      });
      expect(upload.status).toBe(202);
    });

    it('an unknown parameter is a 400 naming it on a sample of routes, the key in the query working as before', async () => {
      const { messageId } = await stack.deliberate({ question: 'Events?', ...COUNCIL }, alice);
      for (const [method, path] of [
        ['GET', '/api/conversations?evil=1'],
        ['GET', `/api/deliberations/${messageId}?evil=1`],
        ['GET', '/api/batches?evil=1'],
        ['GET', '/api/batches/compare?a=x&b=y&evil=1'],
        ['GET', '/api/models?evil=1'],
        ['GET', `/api/deliberations/${messageId}/events?deltas=1&evil=1`],
      ] as const)
        invalid(await send(method, path, { token: alice }), 'evil');
      // /v1 answers in OpenAI's shape, naming the parameter.
      const v1 = await send('GET', '/v1/models?evil=1', { token: alice });
      expect(v1.status).toBe(400);
      expect(v1.json()).toMatchObject({
        error: { type: 'invalid_request_error', message: expect.stringContaining('evil') },
      });
      // EventSource's ?ticket= with ?deltas=1 and ?lastEventId= still opens the stream.
      const issued = await send('POST', `/api/deliberations/${messageId}/events/ticket`, { token: alice });
      expect(issued.status).toBe(200);
      const { ticket } = issued.json() as { ticket: string };
      const events = await send(
        'GET',
        `/api/deliberations/${messageId}/events?ticket=${ticket}&deltas=1&lastEventId=0`,
      );
      expect([200, 204]).toContain(events.status);
    });

    it('no route accepts an unknown query parameter', async () => {
      // Swagger UI's own pages (/api/docs…) are documentation, not API routes: their script reads ?url=.
      const routes = expressRoutes(stack.app!).filter((route) => !route.path.startsWith('/api/docs'));
      expect(routes.length).toBeGreaterThan(25);
      const id = '00000000-0000-4000-8000-000000000000';
      const accepted: string[] = [];
      for (const route of routes) {
        const path = route.path.replace(/:[A-Za-z]+/g, id);
        const answer = await send(route.method, `${path}?evil=1`, {
          token: admin,
          body: ['POST', 'PUT'].includes(route.method) ? '{}' : undefined,
          headers: path === '/mcp' ? { accept: 'application/json, text/event-stream' } : {},
        });
        if (answer.status !== 400 || !answer.text.includes('evil')) {
          accepted.push(`${route.method} ${route.path}: ${answer.status} ${answer.text.slice(0, 200)}`);
        }
      }
      expect(accepted).toEqual([]);
    });
  });
});

describe('PUBLIC_URL: every link under the configured address, whatever the Host', () => {
  const PUBLIC = 'https://conclave.example.com/c';
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    PUBLIC_URL: `${PUBLIC}/`,
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  });
  let key = '';

  beforeAll(async () => {
    await stack.start();
    key = await stack.createUser('carol');
  });
  afterAll(() => stack.stop());

  it('links /v1 answers and MCP results to PUBLIC_URL', async () => {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      sendTo(stack.baseUrl, 'POST', path, {
        token: key,
        body: JSON.stringify(body),
        headers: { ...HOSTILE, ...headers },
      });
    const v1 = await post('/v1/chat/completions', {
      model: 'conclave/council',
      messages: [{ role: 'user', content: 'Linked where?' }],
    });
    expect(v1.status).toBe(200);
    const conclave = v1.json().conclave as { url: string; messageId: string };
    expect(conclave.url).toBe(`${PUBLIC}/#/m/${conclave.messageId}`);
    expect(v1.text.toLowerCase()).not.toContain(EVIL);

    const call = await post(
      '/mcp',
      rpc(1, 'tools/call', { name: 'start_deliberation', arguments: { question: 'And here?', ...COUNCIL } }),
      MCP_HEADERS,
    );
    expect(call.status).toBe(200);
    expect(call.text).toMatch(/https:\/\/conclave\.example\.com\/c\/#\/m\/[0-9a-f-]{36}/);
    expect(call.text.toLowerCase()).not.toContain(EVIL);
    expect(call.text).not.toContain(stack.baseUrl);
  });
});

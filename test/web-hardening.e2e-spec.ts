import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { io } from 'socket.io-client';
import { TestStack } from './support/harness';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A request with exactly the Host and Origin given (fetch does not let a caller choose Host, a
 * browser does: DNS rebinding is a page on the attacker's name answered by this gateway).
 */
function get(baseUrl: string, urlPath: string, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL(urlPath, baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, headers, setHost: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const port = (stack: TestStack): string => new URL(stack.baseUrl).port;

/** Opens a socket sending the given Host; resolves with 'connected' or the connect_error message. */
function openSocket(stack: TestStack, headers: Record<string, string>, token?: string): Promise<string> {
  const socket = io(`${stack.baseUrl}/deliberations`, {
    transports: ['websocket'],
    extraHeaders: headers,
    auth: token ? { token } : {},
    reconnection: false,
    timeout: 10_000,
  });
  return new Promise<string>((resolve) => {
    socket.once('connect', () => resolve('connected'));
    socket.once('connect_error', (error: Error) => resolve(`refused: ${error.message}`));
  }).finally(() => socket.disconnect());
}

describe('the web client: one Content-Security-Policy for every page', () => {
  const webDir = mkdtempSync(path.join(tmpdir(), 'conclave-web-csp-'));
  mkdirSync(path.join(webDir, 'assets'));
  writeFileSync(path.join(webDir, 'index.html'), '<!doctype html><div id="root"></div>');
  writeFileSync(path.join(webDir, 'other.html'), '<!doctype html><p>another page</p>');
  writeFileSync(path.join(webDir, 'assets', 'app.js'), 'console.log(1);');
  const built = new TestStack({ WEB_DIR: webDir });
  const notBuilt = new TestStack({ WEB_DIR: path.join(webDir, 'missing') });

  beforeAll(async () => {
    await built.start({ worker: false });
    await notBuilt.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    await built.stop();
    await notBuilt.stop();
  });

  it('sends /index.html, other .html files and assets with the CSP that / and client routes get', async () => {
    const root = await get(built.baseUrl, '/', { host: `127.0.0.1:${port(built)}` });
    expect(root.status).toBe(200);
    const csp = root.headers['content-security-policy'];
    expect(csp).toContain("img-src 'self' data:");
    expect(csp).toContain("script-src 'self'");
    for (const page of ['/index.html', '/some/client/route', '/other.html', '/assets/app.js']) {
      const answer = await get(built.baseUrl, page, { host: `127.0.0.1:${port(built)}` });
      expect([page, answer.status]).toEqual([page, 200]);
      expect([page, answer.headers['content-security-policy']]).toEqual([page, csp]);
      // and the helmet headers every response gets
      expect([page, answer.headers['x-content-type-options']]).toEqual([page, 'nosniff']);
      expect([page, answer.headers['x-frame-options']]).toEqual([page, root.headers['x-frame-options']]);
    }
  });

  it('sends the "not built yet" page with the same CSP', async () => {
    const csp = (await get(built.baseUrl, '/', { host: `127.0.0.1:${port(built)}` })).headers[
      'content-security-policy'
    ];
    for (const page of ['/', '/index.html']) {
      const answer = await get(notBuilt.baseUrl, page, { host: `127.0.0.1:${port(notBuilt)}` });
      expect([page, answer.status]).toEqual([page, 503]);
      expect([page, answer.headers['content-security-policy']]).toEqual([page, csp]);
    }
  });
});

describe('single-user mode answers only to loopback and configured host names (DNS rebinding)', () => {
  const stack = new TestStack({
    AUTH_MODE: 'none',
    ALLOWED_HOSTS: 'conclave.lan',
    CORS_ORIGINS: 'https://app.example:8443',
  });
  const apikey = new TestStack({ AUTH_MODE: 'apikey' });
  let key = '';

  beforeAll(async () => {
    await stack.start({ worker: false });
    await apikey.start({ worker: false });
    key = await apikey.createUser('rebinding');
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await apikey.stop();
  });

  it('refuses a request for another host name with a clear JSON error', async () => {
    const attempts: Record<string, string>[] = [
      { host: 'evil.example:3000' },
      { host: 'evil.example:3000', origin: 'http://evil.example:3000' },
      { host: 'evil.example' },
    ];
    for (const headers of attempts) {
      for (const page of ['/api/conversations', '/', '/index.html', '/api/docs-json', '/health/ready']) {
        const answer = await get(stack.baseUrl, page, headers);
        expect([page, headers, answer.status]).toEqual([page, headers, 403]);
        expect(answer.headers['content-type']).toMatch(/application\/json/);
        expect(JSON.parse(answer.body)).toEqual({
          statusCode: 403,
          error: 'Forbidden',
          message: expect.stringMatching(/host.*evil\.example.*(ALLOWED_HOSTS)/i),
        });
      }
    }
  });

  it('refuses look-alikes of loopback names and a missing Host header', async () => {
    for (const host of [
      `localhost.evil.example:${port(stack)}`,
      `127.0.0.1.evil.example:${port(stack)}`,
      `evil.example@127.0.0.1:${port(stack)}`,
      `127.0.0.1:${port(stack)}@evil.example`,
      `0.0.0.0:${port(stack)}`,
      `128.0.0.1:${port(stack)}`,
      `127.0.0.256:${port(stack)}`,
      `[::2]:${port(stack)}`,
      'app.example.evil:8443',
    ]) {
      const answer = await get(stack.baseUrl, '/api/conversations', { host });
      expect([host, answer.status]).toEqual([host, 403]);
    }
    // no Host at all: Node's HTTP server itself answers 400 (requireHostHeader)
    expect([400, 403]).toContain((await get(stack.baseUrl, '/api/conversations')).status);
  });

  it('answers loopback names, ALLOWED_HOSTS and the hosts of CORS_ORIGINS', async () => {
    for (const host of [
      `127.0.0.1:${port(stack)}`,
      `localhost:${port(stack)}`,
      `LocalHost:${port(stack)}`,
      'localhost',
      `127.3.4.5:${port(stack)}`,
      `[::1]:${port(stack)}`,
      `conclave.lan:${port(stack)}`,
      'app.example:8443',
    ]) {
      const answer = await get(stack.baseUrl, '/api/conversations', { host });
      expect([host, answer.status]).toEqual([host, 200]);
    }
    const sameOrigin = await get(stack.baseUrl, '/api/conversations', {
      host: `localhost:${port(stack)}`,
      origin: `http://localhost:${port(stack)}`,
    });
    expect(sameOrigin.status).toBe(200);
  });

  it('refuses a socket for another host name and opens one for a loopback name', async () => {
    expect(await openSocket(stack, { host: 'evil.example:3000' })).toMatch(/^refused/);
    expect(
      await openSocket(stack, { host: 'evil.example:3000', origin: 'http://evil.example:3000' }),
    ).toMatch(/^refused/);
    expect(await openSocket(stack, { host: `localhost:${port(stack)}` })).toBe('connected');
    expect(await openSocket(stack, { host: `127.0.0.1:${port(stack)}` })).toBe('connected');
    expect(await openSocket(stack, { host: `conclave.lan:${port(stack)}` })).toBe('connected');
  });

  it('with API keys, keeps answering any host name: the key is the protection', async () => {
    const headers = { host: 'conclave.example.com', authorization: `Bearer ${key}` };
    expect((await get(apikey.baseUrl, '/api/conversations', headers)).status).toBe(200);
    expect((await get(apikey.baseUrl, '/api/conversations', { host: 'conclave.example.com' })).status).toBe(
      401,
    );
    expect(await openSocket(apikey, { host: 'conclave.example.com' }, key)).toBe('connected');
    // and the origin rule is unchanged: the page's own origin, not another site's
    expect(
      await openSocket(apikey, { host: 'conclave.example.com', origin: 'https://conclave.example.com' }, key),
    ).toBe('connected');
    expect(
      await openSocket(apikey, { host: 'conclave.example.com', origin: 'https://evil.example' }, key),
    ).toMatch(/^refused/);
  });
});

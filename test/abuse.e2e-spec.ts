import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { io } from 'socket.io-client';
import { createGateway } from '../apps/gateway/src/app';
import { TestStack } from './support/harness';

const WINDOW_MS = 60_000;

/** Fixed one-minute windows: start a counting test early in one so it cannot straddle two. */
async function freshWindow(): Promise<void> {
  const left = WINDOW_MS - (Date.now() % WINDOW_MS);
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 50));
}

describe('abuse limits', () => {
  const webDir = mkdtempSync(path.join(tmpdir(), 'conclave-web-'));
  writeFileSync(path.join(webDir, 'index.html'), '<!doctype html><title>Conclave</title>');
  const stack = new TestStack({
    WEB_DIR: webDir,
    AUTH_MODE: 'apikey',
    BODY_LIMIT: '4kb',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '12',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '3',
    MAX_ACTIVE_BATCHES_PER_USER: '1',
    CORS_ORIGINS: 'https://app.example.com',
    SIM_LATENCY_MS: '400',
  });
  let second: INestApplication;
  let secondUrl: string;

  beforeAll(async () => {
    await stack.start();
    // A second gateway replica on the same PostgreSQL and Redis.
    second = await createGateway(stack.config, { logger: false });
    await second.listen(0, '127.0.0.1');
    secondUrl = `http://127.0.0.1:${(second.getHttpServer().address() as { port: number }).port}`;
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await stack.stop();
  });

  const get = (base: string, key: string) =>
    fetch(`${base}/api/conversations`, { headers: { authorization: `Bearer ${key}` } });

  it('holds a per-key request limit across gateway replicas, with Retry-After', async () => {
    const key = await stack.createUser('busy');
    const other = await stack.createUser('calm');
    await freshWindow();
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) statuses.push((await get(i % 2 ? secondUrl : stack.baseUrl, key)).status);
    expect(statuses.slice(0, 12)).toEqual(Array(12).fill(200));
    expect(statuses.slice(12)).toEqual([429, 429]);
    const refused = await get(secondUrl, key);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { message: string }).message).toMatch(/at most 12 a minute/);
    // Another key is unaffected.
    expect((await get(stack.baseUrl, other)).status).toBe(200);
  });

  it('limits new deliberations per key, over HTTP and Socket.IO alike', async () => {
    const key = await stack.createUser('eager');
    await freshWindow();
    const body = { question: 'Again?', councilModels: ['sim/a', 'sim/b'] };
    for (let i = 0; i < 3; i++)
      expect((await stack.api('POST', '/api/deliberations', { body, token: key })).status).toBe(202);
    const http = await stack.api<{ message: string }>('POST', '/api/deliberations', { body, token: key });
    expect(http.status).toBe(429);
    expect(http.body.message).toMatch(/Too many new deliberations/);
    const socket = await stack.connect(key);
    const ack = (await socket.emitWithAck('deliberate', body)) as { error?: { message: string } };
    expect(ack.error?.message).toMatch(/Too many new deliberations/);
    // Refused requests store nothing.
    const [{ n }] = await stack.db.query(
      `SELECT count(*)::int AS n FROM messages m JOIN conversations c ON c.id = m.conversation_id
       JOIN users u ON u.id = c.user_id WHERE u.name = 'eager' AND m.role = 'user'`,
    );
    expect(n).toBe(3);
  });

  it('answers 413 to a body over the limit, and stores nothing', async () => {
    const key = await stack.createUser('verbose');
    const response = await stack.api<{ statusCode: number; message: string }>('POST', '/api/deliberations', {
      body: { question: 'x'.repeat(8000) },
      token: key,
    });
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ statusCode: 413, error: 'Payload Too Large' });
    expect(response.body.message).toMatch(/4kb/);
  });

  it('allows a bounded number of active batches per user', async () => {
    const key = await stack.createUser('batcher');
    const batch = {
      defaults: { councilModels: ['sim/a', 'sim/b'] },
      items: [{ question: 'One?' }, { question: 'Two?' }],
    };
    expect((await stack.api('POST', '/api/batches', { body: batch, token: key })).status).toBe(202);
    const second = await stack.api<{ message: string }>('POST', '/api/batches', { body: batch, token: key });
    expect(second.status).toBe(429);
    expect(second.body.message).toMatch(/1 batches queued or running, the most allowed at once is 1/);
  });

  it('answers cross-site requests only for allowed origins', async () => {
    const preflight = (origin: string) =>
      fetch(`${stack.baseUrl}/api/deliberations`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization',
        },
      });
    expect((await preflight('https://app.example.com')).headers.get('access-control-allow-origin')).toBe(
      'https://app.example.com',
    );
    expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses sockets opened by pages on other sites, but not the web client or non-browser clients', async () => {
    const key = await stack.createUser('socketeer');
    const attempt = (origin?: string) =>
      new Promise<string>((resolve) => {
        const socket = io(`${stack.baseUrl}/deliberations`, {
          transports: ['websocket'],
          auth: { token: key },
          reconnection: false,
          ...(origin ? { extraHeaders: { origin } } : {}),
        });
        socket.once('connect', () => (socket.disconnect(), resolve('connected')));
        socket.once('connect_error', () => (socket.disconnect(), resolve('refused')));
      });
    expect(await attempt('https://evil.example')).toBe('refused');
    expect(await attempt(stack.baseUrl)).toBe('connected');
    expect(await attempt('https://app.example.com')).toBe('connected');
    expect(await attempt()).toBe('connected');
  });

  it('sends security headers, and a strict content policy with the web client', async () => {
    const api = await fetch(`${stack.baseUrl}/api/modes`, {
      headers: { authorization: `Bearer ${await stack.createUser('h')}` },
    });
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
    expect(api.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(api.headers.get('strict-transport-security')).toMatch(/max-age=/);
    expect(api.headers.get('x-powered-by')).toBeNull();
    const page = await fetch(`${stack.baseUrl}/c/some-conversation`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("img-src 'self' data:");
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it('refuses a revoked key from the next request on', async () => {
    const key = await stack.createUser('leaver');
    expect((await get(stack.baseUrl, key)).status).toBe(200);
    const run = await stack.revokeKey(key.slice(0, 8));
    expect(run.stdout).toMatch(/revoked 1 key/);
    expect((await get(stack.baseUrl, key)).status).toBe(401);
    expect((await get(secondUrl, key)).status).toBe(401);
  }, 30_000);
});

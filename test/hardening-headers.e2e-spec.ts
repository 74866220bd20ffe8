/// <reference lib="dom" />
// page.evaluate bodies run in the browser.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/web-build';
import { TestStack } from './support/harness';

/**
 * Issue 33 item 6: every 429 and 503 says when to come back (Retry-After); the admin dashboard's
 * browser sign-in holds a session token of its own, never the key, and no key travels in a URL;
 * /api/docs carries a CSP and renders under it.
 */
describe('hardening: Retry-After, admin sessions, CSP on /api/docs', () => {
  // No worker: deliberations and batches stay queued, so the streams and batches they hold stay open.
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    MAX_SSE_STREAMS_PER_USER: '1',
    MAX_ACTIVE_BATCHES_PER_USER: '1',
    TRUST_PROXY_HOPS: '1',
  });
  let browser: Browser | undefined;

  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const expectRetryAfter = (response: Response) => {
    const value = response.headers.get('retry-after');
    expect(value).toMatch(/^\d+$/);
    expect(Number(value)).toBeGreaterThan(0);
  };

  describe('Retry-After on every 429 and 503', () => {
    let key: string;
    let messageId: string;
    let held: AbortController;

    beforeAll(async () => {
      key = await stack.createUser('streamer');
      ({ messageId } = await stack.deliberate({ question: 'Hold a stream', mode: 'council' }, key));
      // The user's one SSE place (MAX_SSE_STREAMS_PER_USER=1), held open.
      held = new AbortController();
      const first = await fetch(`${stack.baseUrl}/api/deliberations/${messageId}/events`, {
        headers: bearer(key),
        signal: held.signal,
      });
      expect(first.status).toBe(200);
    });
    afterAll(() => held.abort());

    it('the SSE stream cap', async () => {
      const refused = await fetch(`${stack.baseUrl}/api/deliberations/${messageId}/events`, {
        headers: bearer(key),
      });
      expect(refused.status).toBe(429);
      expectRetryAfter(refused);
      expect(await refused.json()).toMatchObject({
        message: expect.stringMatching(/MAX_SSE_STREAMS_PER_USER/),
      });
    });

    it('the /v1 stream cap (stream: true) and concurrency cap (stream: false)', async () => {
      for (const stream of [true, false]) {
        const refused = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { ...bearer(key), 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'conclave/council',
            stream,
            messages: [{ role: 'user', content: 'Refused before it starts' }],
          }),
        });
        expect([stream, refused.status]).toEqual([stream, 429]);
        expectRetryAfter(refused);
        const body = (await refused.json()) as { error: { type: string } };
        expect(body.error.type).toBe('rate_limit_error');
      }
    });

    it('the active-batches cap', async () => {
      const batcher = await stack.createUser('batcher');
      const batch = { defaults: { mode: 'council' }, items: [{ question: 'One item' }] };
      const first = await fetch(`${stack.baseUrl}/api/batches`, {
        method: 'POST',
        headers: { ...bearer(batcher), 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
      expect(first.status).toBe(202);
      const second = await fetch(`${stack.baseUrl}/api/batches`, {
        method: 'POST',
        headers: { ...bearer(batcher), 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
      expect(second.status).toBe(429);
      expectRetryAfter(second);
    });
  });

  describe('admin dashboard sign-in', () => {
    let adminKey: string;
    let userKey: string;

    beforeAll(async () => {
      adminKey = await stack.createUser('operator', 'admin');
      userKey = await stack.createUser('plain');
    });

    const signIn = (key: string, headers: Record<string, string> = {}) =>
      fetch(`${stack.baseUrl}/admin/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ key }).toString(),
      });
    const sessionCookie = (response: Response): string => {
      const header = response.headers.get('set-cookie') ?? '';
      const match = /conclave_admin_session=([^;]+)/.exec(header);
      if (!match) throw new Error(`no session cookie in "${header}"`);
      return match[1];
    };
    const dashboard = (token: string, url = '/admin/queues') =>
      fetch(`${stack.baseUrl}${url}`, {
        headers: { cookie: `conclave_admin_session=${token}` },
        redirect: 'manual',
      });

    it('shows the sign-in form, under the CSP, to a browser without a session', async () => {
      const page = await fetch(`${stack.baseUrl}/admin/queues`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(401);
      expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'(;|$)/);
      const html = await page.text();
      expect(html).toMatch(/<form method="post" action="\/admin\/sign-in">/);
      expect(html).toMatch(/type="password" name="key"/);
    });

    it('issues a session token, not the key, in an HttpOnly SameSite=Strict cookie that opens the dashboard', async () => {
      const answer = await signIn(adminKey);
      expect(answer.status).toBe(303);
      expect(answer.headers.get('location')).toBe('/admin/queues');
      const header = answer.headers.get('set-cookie') ?? '';
      expect(header).toMatch(/Path=\/admin/);
      expect(header).toMatch(/HttpOnly/);
      expect(header).toMatch(/SameSite=Strict/);
      // Plain HTTP, no trusted proxy saying otherwise: not Secure (the browser would drop it).
      expect(header).not.toMatch(/Secure/);
      const expires = Date.parse(/Expires=([^;]+)/.exec(header)?.[1] ?? '');
      expect(expires - Date.now()).toBeGreaterThan(11.9 * 3_600_000);
      expect(expires - Date.now()).toBeLessThanOrEqual(12 * 3_600_000);
      const token = sessionCookie(answer);
      expect(token).toMatch(/^cas_/);
      expect(token).not.toContain(adminKey);
      expect(header).not.toContain(adminKey);
      // Stored hashed: neither the token nor the key is in the table.
      const rows: { token_hash: string }[] = await stack.db.query('SELECT token_hash FROM admin_sessions');
      expect(rows.map((r) => r.token_hash)).toContain(createHash('sha256').update(token).digest('hex'));
      expect(JSON.stringify(rows)).not.toContain(token);

      const page = await dashboard(token);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<html/i);
      expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'(;|$)/);
      expect((await dashboard(token, '/admin/queues/api/queues')).status).toBe(200);
      // The raw key as a cookie is nothing any more.
      const asKey = await fetch(`${stack.baseUrl}/admin/queues/api/queues`, {
        headers: { cookie: `conclave_admin_session=${adminKey}; conclave_admin=${adminKey}` },
      });
      expect(asKey.status).toBe(401);
    });

    it('marks the cookie Secure when a trusted proxy says the browser used TLS', async () => {
      const answer = await signIn(adminKey, { 'x-forwarded-proto': 'https' });
      expect(answer.status).toBe(303);
      expect(answer.headers.get('set-cookie')).toMatch(/; Secure/);
    });

    it('never takes a key from a URL, and gives no session to a wrong or non-admin key', async () => {
      for (const url of [
        `/admin/queues?access_token=${adminKey}`,
        `/admin/queues/api/queues?access_token=${adminKey}`,
      ]) {
        const refused = await fetch(`${stack.baseUrl}${url}`, { redirect: 'manual' });
        expect([url, refused.status]).toEqual([url, 400]);
        expect(refused.headers.get('set-cookie')).toBeNull();
        expect(await refused.text()).toMatch(/not accepted in URLs/);
      }
      const signInByUrl = await fetch(`${stack.baseUrl}/admin/sign-in?access_token=${adminKey}`, {
        method: 'POST',
        redirect: 'manual',
      });
      expect(signInByUrl.status).toBe(400);
      expect(signInByUrl.headers.get('set-cookie')).toBeNull();

      const asUser = await signIn(userKey);
      expect(asUser.status).toBe(403);
      expect(asUser.headers.get('set-cookie')).toBeNull();
      const wrong = await signIn('ck_notakey0000000000000000');
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('set-cookie')).toBeNull();
      // The key in a JSON body (an API client) or the Authorization header works too.
      const byJson = await fetch(`${stack.baseUrl}/admin/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: adminKey }),
      });
      expect(byJson.status).toBe(303);
      const byHeader = await fetch(`${stack.baseUrl}/admin/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: bearer(adminKey),
      });
      expect(byHeader.status).toBe(303);
    });

    it('expires', async () => {
      const token = sessionCookie(await signIn(adminKey));
      expect((await dashboard(token)).status).toBe(200);
      await stack.db.query(
        "UPDATE admin_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1",
        [createHash('sha256').update(token).digest('hex')],
      );
      const ended = await dashboard(token, '/admin/queues/api/queues');
      expect(ended.status).toBe(401);
      expect(await ended.json()).toMatchObject({ message: expect.stringMatching(/session has ended/) });
    });

    it('ends when signing out', async () => {
      const token = sessionCookie(await signIn(adminKey));
      const out = await fetch(`${stack.baseUrl}/admin/sign-out`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: `conclave_admin_session=${token}` },
      });
      expect(out.status).toBe(303);
      expect((await dashboard(token)).status).toBe(401);
    });

    it('stops working once its API key is revoked', async () => {
      const otherKey = await stack.createUser('second-operator', 'admin');
      const token = sessionCookie(await signIn(otherKey));
      const stays = sessionCookie(await signIn(adminKey));
      expect((await dashboard(token)).status).toBe(200);
      await stack.revokeKey(otherKey.slice(0, 8));
      expect((await dashboard(token)).status).toBe(401);
      expect((await dashboard(token, '/admin/queues/api/queues')).status).toBe(401);
      // Another key's session is not touched.
      expect((await dashboard(stays)).status).toBe(200);
    });

    it('signs a browser in through the form: the dashboard renders, no URL carries the key, the cookie is not the key', async () => {
      browser ??= await launchChromium();
      const context = await browser.newContext();
      const page = await context.newPage();
      const urls: string[] = [];
      page.on('request', (request) => urls.push(request.url()));
      await page.goto(`${stack.baseUrl}/admin/queues`);
      // A wrong key: the form again, saying so, and no cookie.
      await page.fill('input[name="key"]', 'ck_wrong000000000000000000');
      await Promise.all([page.waitForURL(/\/admin\/sign-in$/), page.click('button[type="submit"]')]);
      await page.getByText('Invalid API key').waitFor();
      const shots = path.join(tmpdir(), 'conclave-shots');
      mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: path.join(shots, 'admin-sign-in.png') });
      expect(await context.cookies()).toEqual([]);
      await page.fill('input[name="key"]', adminKey);
      await Promise.all([page.waitForURL(/\/admin\/queues\/?$/), page.click('button[type="submit"]')]);
      // Bull Board's app has rendered the stage queue.
      await page.getByText('deliberation-stages').first().waitFor({ timeout: 20_000 });
      await page.screenshot({ path: path.join(shots, 'admin-dashboard.png') });
      expect(urls.length).toBeGreaterThan(3);
      for (const url of urls) expect(url).not.toContain(adminKey);
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === 'conclave_admin_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin' });
      expect(session?.value).not.toContain(adminKey);
      expect(JSON.stringify(cookies)).not.toContain(adminKey);
      await context.close();
    }, 60_000);
  });

  describe('CSP on /api/docs', () => {
    it('answers with the CSP, scripts from its own origin only', async () => {
      const page = await fetch(`${stack.baseUrl}/api/docs`);
      expect(page.status).toBe(200);
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toMatch(/script-src 'self'(;|$)/);
      expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
      expect(csp).toMatch(/frame-ancestors 'none'/);
    });

    it('renders in Chromium without a CSP violation', async () => {
      browser ??= await launchChromium();
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
      });
      await page.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (event) => {
          const seen = ((window as unknown as { cspViolations?: string[] }).cspViolations ??= []);
          seen.push(`${event.violatedDirective} ${event.blockedURI}`);
        });
      });
      await page.goto(`${stack.baseUrl}/api/docs`);
      await page.locator('.swagger-ui .info .title').waitFor({ timeout: 20_000 });
      expect(await page.locator('.swagger-ui .info .title').innerText()).toMatch(/Conclave/);
      await page.locator('.opblock').first().waitFor();
      const shots = path.join(tmpdir(), 'conclave-shots');
      mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: path.join(shots, 'api-docs.png') });
      const violations = await page.evaluate(
        () => (window as unknown as { cspViolations?: string[] }).cspViolations ?? [],
      );
      expect([...violations, ...problems]).toEqual([]);
      await page.close();
    }, 60_000);
  });
});

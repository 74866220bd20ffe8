/// <reference lib="dom" />
// page.waitForFunction bodies run in the browser.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { builtWebClient, launchChromium } from './support/web-build';
import { TestStack } from './support/harness';

const IMMUTABLE = 'public, max-age=31536000, immutable';
/** What the first view may load, compressed: the scripts and styles index.html names. */
const FIRST_VIEW_BUDGET = 120 * 1024;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The bytes as sent (fetch would decode them), with the headers given and no others. */
function get(
  baseUrl: string,
  urlPath: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Answer> {
  const url = new URL(urlPath, baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** What index.html makes the browser fetch before the first render: entry script, preloads, styles. */
function upFront(html: string): string[] {
  const found: string[] = [];
  for (const tag of html.match(/<(?:script|link)\b[^>]*>/g) ?? []) {
    const src = /\b(?:src|href)="([^"]+)"/.exec(tag)?.[1];
    if (!src) continue;
    if (tag.startsWith('<script') || /\brel="(?:modulepreload|stylesheet)"/.test(tag)) found.push(src);
  }
  return found;
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

describe('web client delivery: precompressed, immutable hashed assets', () => {
  const webDir = builtWebClient();
  const stack = new TestStack({ WEB_DIR: webDir });
  let browser: Browser | undefined;
  let html = '';
  let assets: string[] = [];

  beforeAll(async () => {
    await stack.start({ worker: false });
    html = (await get(stack.baseUrl, '/')).body.toString('utf8');
    assets = upFront(html);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  const original = (asset: string) => readFileSync(path.join(webDir, asset));

  it('index.html names hashed scripts and styles only, split into vendor chunks', () => {
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) expect(asset).toMatch(/^\/assets\/[\w-]+-[\w-]{8,}\.(?:js|css)$/);
    expect(assets.some((a) => /\/react-[\w-]+\.js$/.test(a))).toBe(true);
    // socket.io-client in a chunk of its own, whether the first view loads it or not
    expect(readdirSync(path.join(webDir, 'assets')).some((f) => /^socket-[\w-]+\.js$/.test(f))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
  });

  it('sends a hashed asset brotli-compressed to a browser that accepts br, cached as immutable', async () => {
    for (const asset of assets) {
      const answer = await get(stack.baseUrl, asset, { 'accept-encoding': 'gzip, deflate, br' });
      expect([asset, answer.status]).toEqual([asset, 200]);
      expect(answer.headers['content-encoding']).toBe('br');
      expect(answer.headers['cache-control']).toBe(IMMUTABLE);
      expect(answer.headers.vary).toMatch(/accept-encoding/i);
      expect(answer.headers['content-type']).toMatch(
        asset.endsWith('.css') ? /^text\/css; charset=utf-8$/ : /^text\/javascript; charset=utf-8$/,
      );
      expect(Number(answer.headers['content-length'])).toBe(answer.body.length);
      expect(brotliDecompressSync(answer.body).equals(original(asset))).toBe(true);
      expect(answer.body.length).toBeLessThan(original(asset).length);
      // the web client's headers, as on every other file
      expect(answer.headers['content-security-policy']).toContain("script-src 'self'");
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('sends gzip to a client that accepts only gzip, and the file as it is to one that accepts neither', async () => {
    const script = assets.find((a) => a.endsWith('.js'))!;
    const gzipped = await get(stack.baseUrl, script, { 'accept-encoding': 'gzip' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers['cache-control']).toBe(IMMUTABLE);
    expect(gzipped.headers.vary).toMatch(/accept-encoding/i);
    expect(gunzipSync(gzipped.body).equals(original(script))).toBe(true);

    const neither: Record<string, string>[] = [
      {},
      { 'accept-encoding': 'identity' },
      { 'accept-encoding': 'br;q=0, gzip;q=0' },
    ];
    for (const headers of neither) {
      const plain = await get(stack.baseUrl, script, headers);
      expect([headers, plain.status, plain.headers['content-encoding']]).toEqual([headers, 200, undefined]);
      expect(plain.headers['cache-control']).toBe(IMMUTABLE);
      expect(plain.headers.vary).toMatch(/accept-encoding/i);
      expect(plain.headers['content-type']).toMatch(/^text\/javascript; charset=utf-8$/);
      expect(plain.body.equals(original(script))).toBe(true);
    }
    // preferences by q, and `*`
    expect(
      (await get(stack.baseUrl, script, { 'accept-encoding': 'br;q=0.5, gzip' })).headers['content-encoding'],
    ).toBe('gzip');
    expect((await get(stack.baseUrl, script, { 'accept-encoding': '*' })).headers['content-encoding']).toBe(
      'br',
    );
    // each coding has its own validator
    const etags = await Promise.all(
      ['br', 'gzip', 'identity'].map(
        async (coding) => (await get(stack.baseUrl, script, { 'accept-encoding': coding })).headers.etag,
      ),
    );
    expect(new Set(etags).size).toBe(3);
    // HEAD: the compressed copy's length, no body
    const head = await get(stack.baseUrl, script, { 'accept-encoding': 'br' }, 'HEAD');
    expect(head.headers['content-encoding']).toBe('br');
    expect(Number(head.headers['content-length'])).toBe(statSync(path.join(webDir, `${script}.br`)).size);
    expect(head.body.length).toBe(0);
  });

  it('has the page revalidated on every visit, and a missing asset is a 404, not the page', async () => {
    for (const page of ['/', '/index.html', '/some/client/route']) {
      const answer = await get(stack.baseUrl, page, { 'accept-encoding': 'gzip, br' });
      expect([page, answer.status, answer.headers['cache-control']]).toEqual([page, 200, 'no-cache']);
      expect(answer.headers['content-type']).toMatch(/^text\/html/);
      expect(answer.headers['content-security-policy']).toContain("script-src 'self'");
    }
    const missing = await get(stack.baseUrl, '/assets/index-AAAAAAAA.js', { 'accept-encoding': 'br' });
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).not.toMatch(/html/);
  });

  it(`loads at most ${kb(FIRST_VIEW_BUDGET)} compressed for the first view`, async () => {
    const sizes: Record<string, { raw: number; br: number; gzip: number }> = {};
    for (const asset of assets) {
      const [br, gzip] = await Promise.all(
        ['br', 'gzip'].map(async (coding) => {
          const answer = await get(stack.baseUrl, asset, { 'accept-encoding': coding });
          expect(answer.headers['content-encoding']).toBe(coding);
          return answer.body.length;
        }),
      );
      sizes[asset] = { raw: original(asset).length, br, gzip };
    }
    const total = (key: 'raw' | 'br' | 'gzip') => Object.values(sizes).reduce((sum, s) => sum + s[key], 0);
    console.log(
      [
        'first view (index.html up front):',
        ...Object.entries(sizes).map(
          ([asset, s]) => `  ${asset}: ${kb(s.raw)} raw, ${kb(s.gzip)} gzip, ${kb(s.br)} br`,
        ),
        `  total: ${kb(total('raw'))} raw, ${kb(total('gzip'))} gzip, ${kb(total('br'))} br (budget ${kb(FIRST_VIEW_BUDGET)})`,
      ].join('\n'),
    );
    expect(total('gzip')).toBeLessThanOrEqual(FIRST_VIEW_BUDGET);
    expect(total('br')).toBeLessThanOrEqual(FIRST_VIEW_BUDGET);
  });

  it('in Chromium: the page renders from compressed scripts', async () => {
    browser = await launchChromium();
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const loaded: { url: string; type: string; encoding: string | undefined; cache: string | undefined }[] =
      [];
    page.on('response', (response) => {
      const request = response.request();
      if (!['script', 'stylesheet'].includes(request.resourceType())) return;
      const headers = response.headers();
      loaded.push({
        url: new URL(response.url()).pathname,
        type: request.resourceType(),
        encoding: headers['content-encoding'],
        cache: headers['cache-control'],
      });
    });
    await page.goto(`${stack.baseUrl}/`, { waitUntil: 'load' });
    await page.waitForFunction(() => (document.getElementById('root')?.childElementCount ?? 0) > 0);
    expect(errors).toEqual([]);
    const scripts = loaded.filter((r) => r.type === 'script');
    expect(scripts.length).toBeGreaterThanOrEqual(2);
    for (const response of loaded) {
      expect(response).toMatchObject({ encoding: expect.stringMatching(/^(?:br|gzip)$/), cache: IMMUTABLE });
    }
    // everything index.html names up front (and whatever the first view imports on demand)
    expect(loaded.map((r) => r.url)).toEqual(expect.arrayContaining(assets));
  }, 60_000);
});

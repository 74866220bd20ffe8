import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, relative, resolve, sep } from 'node:path';
import { ADMIN_PATH } from '../ops/admin';
import { RETRY_AFTER_SECONDS } from './api-error';

/** Model output is rendered in this page: no script but our own, no external images or frames. */
export const WEB_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self' ws: wss:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** A file whose name carries its content's hash never changes: cached for a year, never revalidated. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Everything else (index.html first): cached, but revalidated (ETag) before each use. */
export const REVALIDATE = 'no-cache';

/** Vite's output names, `[name]-[hash].[ext]`: a hash of 8 or more URL-safe characters. */
const HASHED = /-[A-Za-z0-9_-]{8,}\.[A-Za-z0-9]+$/;
/** Files the build also writes as `.br` and `.gz` (apps/web/vite.config.mts, precompress). */
const COMPRESSIBLE = /\.(?:js|mjs|css|html|json|svg|txt|map|wasm)$/;
/** A path under /assets/ this middleware looks up: plain names, no dot segments, no encoding. */
const ASSET_PATH = /^\/assets\/(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*\/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

export type ContentCoding = 'br' | 'gzip';

const SUFFIX: Record<ContentCoding, string> = { br: '.br', gzip: '.gz' };

/**
 * The codings an Accept-Encoding header accepts, best first (RFC 9110 §12.5.3): a coding named
 * with q > 0, or not named while `*` has q > 0; by q, brotli before gzip at equal q. Identity is
 * always acceptable after them (a client that refuses it still gets a file it can read).
 */
export function acceptedCodings(header: string | string[] | undefined): ContentCoding[] {
  const weights = new Map<string, number>();
  for (const part of (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',')) {
    const [name, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!name) continue;
    let q = 1;
    for (const param of params) {
      const match = /^q=([01](?:\.\d{0,3})?)$/.exec(param.replace(/\s+/g, ''));
      if (match) q = Number(match[1]);
    }
    weights.set(name === 'x-gzip' ? 'gzip' : name, q);
  }
  const weight = (coding: ContentCoding) => weights.get(coding) ?? weights.get('*') ?? 0;
  return (['br', 'gzip'] as const)
    .filter((coding) => weight(coding) > 0)
    .sort((a, b) => weight(b) - weight(a));
}

/** Cache-Control for a file of the build in `dir`: immutable for vite's hashed output in assets/. */
export function cachePolicy(dir: string, file: string): string {
  const path = relative(dir, file).split(sep);
  return path.length >= 2 && path[0] === 'assets' && HASHED.test(path[path.length - 1])
    ? IMMUTABLE
    : REVALIDATE;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * A hashed asset as the build precompressed it: `<file>.br` or `<file>.gz`, whichever the browser
 * accepts first, with the original's Content-Type and `Content-Encoding`. `Vary: Accept-Encoding`
 * on every answer for a compressible file, the uncompressed one too (shared caches keep one copy
 * per coding). A file without a copy in an accepted coding is left to the static middleware.
 */
function precompressedAssets(dir: string) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !ASSET_PATH.test(req.path)) return next();
    if (!COMPRESSIBLE.test(req.path)) return next();
    res.vary('Accept-Encoding');
    const name = req.path.slice(1);
    const file = join(dir, name);
    const codings = acceptedCodings(req.headers['accept-encoding']);
    void (async () => {
      for (const coding of codings) {
        const encoded = name + SUFFIX[coding];
        if (!(await isFile(join(dir, encoded))) || !(await isFile(file))) continue;
        res.setHeader('Content-Encoding', coding);
        res.setHeader('Cache-Control', cachePolicy(dir, file));
        res.type(extname(file));
        // Byte ranges of a compressed copy are of no use to a browser loading a script.
        res.sendFile(encoded, { root: dir, acceptRanges: false }, (error?: Error) => {
          if (error && !res.headersSent) {
            res.removeHeader('Content-Encoding');
            next();
          }
        });
        return;
      }
      next();
    })().catch(next);
  };
}

/**
 * The browser client at `/`: its built files, and its page for every other non-API path. Every
 * response of the client carries WEB_CSP, whichever middleware answers: `/`, a client route,
 * `/index.html` or another file of the build (the static middleware), the "not built" page.
 * Hashed assets (/assets/*-[hash].*) are sent precompressed (brotli or gzip) and cached for a
 * year as immutable; index.html and every other file are revalidated before each use.
 */
export function serveWebClient(app: NestExpressApplication, webDir: string): void {
  const dir = resolve(webDir);
  const index = join(dir, 'index.html');
  const built = existsSync(index);
  const notClient = ['/api', '/socket.io', '/health/', '/metrics', '/v1/', '/mcp', ADMIN_PATH];
  const isClient = (req: Request) => !notClient.some((prefix) => req.path.startsWith(prefix));
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (isClient(req)) res.setHeader('Content-Security-Policy', WEB_CSP);
    next();
  });
  if (built) {
    app.use(precompressedAssets(dir));
    app.useStaticAssets(dir, {
      index: false,
      setHeaders: (res: Response, path: string) => res.setHeader('Cache-Control', cachePolicy(dir, path)),
    });
  }
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' || !isClient(req)) return next();
    // A missing script or style is a 404, not the page: a browser would try to run the HTML.
    if (req.path.startsWith('/assets/')) return next();
    res.setHeader('Cache-Control', REVALIDATE);
    if (built) return res.sendFile('index.html', { root: dir });
    res
      .status(503)
      .setHeader('Cache-Control', 'no-store')
      .setHeader('Retry-After', String(RETRY_AFTER_SECONDS))
      .type('html')
      .send(
        '<p>The web client is not built yet: run <code>npm run build:web</code> (npm start does it for you).</p>',
      );
  });
}

import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, type INestApplication } from '@nestjs/common';
import {
  ADMIN_SESSION_TTL_MS,
  AdminSessionsRepository,
  ApiKeysRepository,
  type ApiKeyOwner,
} from '@conclave/persistence';
import { type StageQueue } from '@conclave/redis';
import { urlencoded, type NextFunction, type Request, type Response } from 'express';
import type { TLSSocket } from 'node:tls';
import { AuthService } from '../auth/auth.service';
import { RETRY_AFTER_SECONDS } from '../common/api-error';
import { RateLimited, RateLimiter } from '../common/rate-limiter';
import { LIFECYCLE_QUEUE } from '@conclave/contracts';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG, STAGE_QUEUE } from '@conclave/platform';
import type { Queue } from 'bullmq';
import { THIRD_PARTY_PAGE_CSP } from '../common/page-csp';

export const ADMIN_PATH = '/admin/queues';
/** Where the sign-in form posts the admin key, and where a session is ended. */
export const ADMIN_SIGN_IN_PATH = '/admin/sign-in';
export const ADMIN_SIGN_OUT_PATH = '/admin/sign-out';
/** The dashboard's session cookie: a session token (`cas_…`), never the API key. */
export const ADMIN_SESSION_COOKIE = 'conclave_admin_session';

/**
 * Every page under /admin (the sign-in form, Bull Board): scripts only from this origin, no inline
 * script. Bull Board's inline `<style>` and style attributes need 'unsafe-inline' for styles; its
 * web-font stylesheet from another origin is refused (the page falls back to a system font).
 */
export const ADMIN_CSP = THIRD_PARTY_PAGE_CSP;

/**
 * The retention job's queue, for the dashboard: its runs and failures show beside the stages'.
 * Registered with @nestjs/bullmq on the producer connection (OpsModule), which closes it with the
 * application.
 */
@Injectable()
export class LifecycleQueueView {
  constructor(@InjectQueue(LIFECYCLE_QUEUE) readonly queue: Queue) {
    // Its connection's errors are the producer's, already logged there.
    this.queue.on('error', () => undefined);
  }
}

function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key !== name) continue;
    try {
      return decodeURIComponent(value.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Whether the browser reached us over TLS: the connection's own, or, behind TRUST_PROXY_HOPS
 * trusted proxies, what the first of them says in X-Forwarded-Proto.
 */
export function servedOverTls(req: Request, trustProxyHops: number): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true;
  if (trustProxyHops === 0) return false;
  const header = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https';
}

const ADMIN_SESSION_HOURS = ADMIN_SESSION_TTL_MS / 3_600_000;
/** The cookie of the sign-in before issue 33, which held the API key itself: cleared wherever seen. */
const OLD_KEY_COOKIE = 'conclave_admin';

const wantsHtml = (req: Request): boolean => (req.headers.accept ?? '').includes('text/html');

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The sign-in form: the key travels once, in the POST body; the browser keeps a session token. */
export function signInPage(notice: string | null): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Conclave queue dashboard: sign in</title>
</head>
<body>
<main>
<h1>Conclave queue dashboard</h1>
<p>Sign in with an admin API key. The key is sent once, in this form's body; the browser then
holds a session of its own for ${ADMIN_SESSION_HOURS} hours, never the key.</p>
${notice ? `<p role="alert"><strong>${escapeHtml(notice)}</strong></p>` : ''}
<form method="post" action="${ADMIN_SIGN_IN_PATH}">
<label>Admin API key <input type="password" name="key" autocomplete="off" required></label>
<button type="submit">Sign in</button>
</form>
</main>
</body>
</html>
`;
}

/**
 * Bull Board for operators: admin keys only. An API client sends the key as
 * `Authorization: Bearer`; a browser opens `/admin/queues`, gets the sign-in form, posts the key to
 * /admin/sign-in and from then on carries a session token in an HttpOnly, SameSite=Strict cookie
 * scoped to /admin (`Secure` over TLS), valid for 12 hours or until its key is revoked. A key is
 * never taken from a URL.
 */
export function mountAdmin(app: INestApplication): void {
  const config = app.get<ConclaveConfig>(CONFIG);
  const auth = app.get(AuthService);
  const limiter = app.get(RateLimiter);
  const apiKeys = app.get(ApiKeysRepository);
  const sessions = app.get(AdminSessionsRepository);
  const queue = app.get<StageQueue>(STAGE_QUEUE);
  const lifecycle = app.get(LifecycleQueueView).queue;
  const board = new ExpressAdapter();
  board.setBasePath(ADMIN_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(queue.queue), new BullMQAdapter(lifecycle, { readOnlyMode: true })],
    serverAdapter: board,
  });

  /** A refusal: the sign-in form for a browser, the API's JSON error for anything else. */
  const refuse = (req: Request, res: Response, status: number, message: string, notice = true) => {
    res.status(status);
    if (wantsHtml(req)) {
      res
        .setHeader('Cache-Control', 'no-store')
        .type('html')
        .send(signInPage(notice ? message : null));
      return;
    }
    const error = status === 400 ? 'Bad Request' : status === 401 ? 'Unauthorized' : 'Forbidden';
    res.json({ statusCode: status, error, message });
  };

  const failed = (res: Response, error: unknown) => {
    if (error instanceof RateLimited) {
      res.setHeader('Retry-After', String(error.retryAfterSeconds));
      res.status(429).json(error.getResponse());
      return;
    }
    res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    res.status(503).json({
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'Authentication is unavailable right now',
    });
  };

  /**
   * Who presents `credential` (an API key or a session token), with the address's wrong-key count
   * checked before and raised after a miss; single-user mode needs none.
   */
  const identify = async (
    req: Request,
    credential: { key: string } | { session: string } | null,
  ): Promise<ApiKeyOwner | { userId: string; keyId: null } | null> => {
    if (config.authMode === 'none') return auth.identify(undefined);
    if (credential === null) return null;
    const address = limiter.clientAddress(req);
    await limiter.assertAuthAllowed(address);
    const owner =
      'key' in credential
        ? await apiKeys.ownerOf(credential.key)
        : await sessions.ownerOf(credential.session);
    if (!owner) await limiter.recordAuthFailure(address);
    return owner;
  };

  // Every page under /admin carries its CSP; an API key in a URL is refused before anything reads it.
  app.use('/admin', (req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', ADMIN_CSP);
    if (cookie(req, OLD_KEY_COOKIE) !== undefined) res.clearCookie(OLD_KEY_COOKIE, { path: '/admin' });
    if (Object.prototype.hasOwnProperty.call(req.query, 'access_token')) {
      refuse(
        req,
        res,
        400,
        'API keys are not accepted in URLs (access_token): sign in at /admin/queues, or send "Authorization: Bearer <key>"',
      );
      return;
    }
    next();
  });

  app.use(
    ADMIN_SIGN_IN_PATH,
    urlencoded({ extended: false, limit: '4kb' }),
    (req: Request, res: Response) => {
      if (req.method !== 'POST') {
        res.redirect(303, ADMIN_PATH);
        return;
      }
      const body = (req.body ?? {}) as { key?: unknown };
      const key =
        typeof body.key === 'string' ? body.key.trim() : AuthService.bearer(req.headers.authorization);
      if (config.authMode !== 'none' && !key) {
        refuse(
          req,
          res,
          400,
          'Send the admin API key as the form field "key" (or "Authorization: Bearer <key>")',
        );
        return;
      }
      identify(req, key ? { key } : null)
        .then(async (owner) => {
          if (!owner) return refuse(req, res, 401, 'Invalid API key');
          if (!(await apiKeys.isAdmin(owner.userId)))
            return refuse(req, res, 403, 'The queue dashboard is for admin keys only');
          // Single-user mode has no key to tie a session to, and needs none.
          if (owner.keyId !== null) {
            const session = await sessions.open({ userId: owner.userId, keyId: owner.keyId });
            res.cookie(ADMIN_SESSION_COOKIE, session.token, {
              httpOnly: true,
              sameSite: 'strict',
              path: '/admin',
              secure: servedOverTls(req, config.abuse.trustProxyHops),
              expires: session.expiresAt,
            });
          }
          res.setHeader('Cache-Control', 'no-store');
          res.redirect(303, ADMIN_PATH);
        })
        .catch((error: unknown) => failed(res, error));
    },
  );

  app.use(ADMIN_SIGN_OUT_PATH, (req: Request, res: Response) => {
    if (req.method !== 'POST') {
      res.redirect(303, ADMIN_PATH);
      return;
    }
    const token = cookie(req, ADMIN_SESSION_COOKIE);
    (token ? sessions.close(token) : Promise.resolve())
      .then(() => {
        res.clearCookie(ADMIN_SESSION_COOKIE, { path: '/admin', httpOnly: true, sameSite: 'strict' });
        res.redirect(303, ADMIN_PATH);
      })
      .catch((error: unknown) => failed(res, error));
  });

  const guard = (req: Request, res: Response, next: NextFunction) => {
    const key = AuthService.bearer(req.headers.authorization);
    const session = key === undefined ? cookie(req, ADMIN_SESSION_COOKIE) : undefined;
    identify(req, key !== undefined ? { key } : session !== undefined ? { session } : null)
      .then(async (owner) => {
        if (!owner) {
          // A session that ended (expired, its key revoked) leaves no cookie behind.
          if (session !== undefined) res.clearCookie(ADMIN_SESSION_COOKIE, { path: '/admin' });
          const message =
            session !== undefined && key === undefined
              ? 'The dashboard session has ended: sign in again at /admin/queues'
              : 'Missing or invalid API key: sign in at /admin/queues in a browser, or send "Authorization: Bearer <key>"';
          // A first visit gets the plain form; an ended session is told why.
          refuse(req, res, 401, message, session !== undefined);
          return;
        }
        if (!(await apiKeys.isAdmin(owner.userId))) {
          refuse(req, res, 403, 'The queue dashboard is for admin keys only');
          return;
        }
        next();
      })
      .catch((error: unknown) => failed(res, error));
  };
  app.use(ADMIN_PATH, guard, board.getRouter());
}

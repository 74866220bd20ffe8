import type { INestApplicationContext } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import type { ConclaveConfig } from '@conclave/config';
import type { ApiErrorBody } from '@conclave/contracts';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import type { Server, ServerOptions } from 'socket.io';
import { fromApiErrorBody } from '../openai/errors';
import { isOpenAiPath, sendOpenAiError } from '../openai/openai-error.filter';
import { writeEachTurnAtOnce, type EngineConnection } from '../events/turn-writes';

export type HostSettings = Pick<ConclaveConfig, 'authMode' | 'corsOrigins' | 'allowedHosts'>;

/** The web client's own origin (same host as the request) or one of the configured ones. */
export function originAllowed(
  origin: string | undefined,
  host: string | undefined,
  allowed: string[],
): boolean {
  if (!origin) return true; // not a browser: CLIs and servers send no Origin
  if (host && (origin === `http://${host}` || origin === `https://${host}`)) return true;
  return allowed.includes(origin);
}

/** A Host header: a DNS name or IPv4 address, or a bracketed IPv6 address, then an optional port. */
const HOST_HEADER =
  /^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:\d{1,5})?$/;

/** The host name of a Host header, in lower case (IPv6 in brackets); null when it is not one. */
export function hostnameOf(host: string | undefined): string | null {
  const match = HOST_HEADER.exec((host ?? '').trim().toLowerCase());
  return match ? match[1] : null;
}

/** localhost, 127.0.0.0/8 or [::1]: names only this machine answers to, whatever DNS says. */
export function isLoopback(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(hostname);
  return octets !== null && octets.slice(1).every((o) => Number(o) <= 255);
}

/**
 * The host names a gateway answers to, or null for any. Single-user mode has no key to stop a page
 * on another site that the attacker's DNS points at this gateway (DNS rebinding): the page is then
 * same-origin with the gateway in the browser's eyes, so CORS and the Origin check pass. Only its
 * Host header tells: it names the attacker's domain. So single-user mode answers loopback names,
 * the hosts of CORS_ORIGINS and ALLOWED_HOSTS only. With API keys the key is the protection.
 */
export function trustedHostnames(settings: HostSettings): string[] | null {
  if (settings.authMode !== 'none') return null;
  return [...settings.allowedHosts, ...settings.corsOrigins.map((origin) => new URL(origin).hostname)];
}

export function hostAllowed(host: string | undefined, trusted: string[] | null): boolean {
  if (trusted === null) return true;
  const hostname = hostnameOf(host);
  return hostname !== null && (isLoopback(hostname) || trusted.includes(hostname));
}

export function hostRefusal(host: string | undefined): string {
  return (
    `Single-user mode answers only localhost, 127.0.0.1 and [::1] (and ALLOWED_HOSTS / CORS_ORIGINS), ` +
    `not the host "${(host ?? '').slice(0, 100)}": open it at http://localhost:<port>, or add the name ` +
    `to ALLOWED_HOSTS if you expose single-user mode on purpose`
  );
}

/** Express middleware refusing, in single-user mode, any request whose Host is not a trusted name. */
export function hostGuard(settings: HostSettings) {
  const trusted = trustedHostnames(settings);
  return (req: Request, res: Response, next: NextFunction): void => {
    if (hostAllowed(req.headers.host, trusted)) return next();
    const body: ApiErrorBody = {
      statusCode: 403,
      error: 'Forbidden',
      message: hostRefusal(req.headers.host),
    };
    // The OpenAI-compatible surface answers in OpenAI's error shape.
    if (isOpenAiPath(req.path)) return sendOpenAiError(res, fromApiErrorBody(body));
    res.status(403).json(body);
  };
}

/**
 * Socket.IO with the same origin rule as HTTP CORS: a page on another site cannot open a socket in
 * the name of a browser that can reach the gateway (in single-user mode that would be enough to
 * start deliberations). In single-user mode, the same Host rule as HTTP (hostGuard) too.
 */
export class OriginCheckedIoAdapter extends IoAdapter {
  private readonly trusted: string[] | null;

  constructor(
    app: INestApplicationContext,
    private readonly settings: HostSettings,
  ) {
    super(app);
    this.trusted = trustedHostnames(settings);
  }

  override createIOServer(port: number, options?: ServerOptions): Server {
    const allowed = this.settings.corsOrigins;
    const server = super.createIOServer(port, {
      ...options,
      cors: { origin: allowed.length > 0 ? allowed : false },
      allowRequest: (req: IncomingMessage, callback: (err: string | null, success: boolean) => void) => {
        if (!hostAllowed(req.headers.host, this.trusted))
          return callback(hostRefusal(req.headers.host), false);
        callback(null, originAllowed(req.headers.origin, req.headers.host, allowed));
      },
    }) as Server;
    server.engine.on('connection', (connection: EngineConnection) => writeEachTurnAtOnce(connection));
    return server;
  }
}

import type { INestApplicationContext } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import type { ConclaveConfig } from '@conclave/config';
import type { ApiErrorBody } from '@conclave/contracts';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import type { Server, ServerOptions, Socket } from 'socket.io';
import { fromApiErrorBody } from '../openai/errors';
import { isOpenAiPath, sendOpenAiError } from '../openai/openai-error.filter';
import { writeEachTurnAtOnce, type EngineConnection } from '../events/turn-writes';
import type { RateLimiter } from './rate-limiter';

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

/** What the Socket.IO server needs of the rate limiter: the per-address count of failed attempts. */
export type SocketAddressLimiter = Pick<RateLimiter, 'clientAddress' | 'recordAuthFailure'>;

/**
 * How long an engine.io connection may stay without joining a namespace (Socket.IO's
 * `connectTimeout`, 45 s by default): a client connects its namespace right after the transport
 * opens, so an idle one is a client holding a connection for nothing.
 */
export const SOCKET_CONNECT_TIMEOUT_MS = 10_000;

/** How long a refused connection is given to take its refusal before it is dropped. */
const REFUSAL_GRACE_MS = 1_000;

/** The engine.io connection, as far as this file uses it. */
interface RawConnection extends EngineConnection {
  readonly request: IncomingMessage;
  readonly readyState: string;
  on(event: 'flush', listener: () => void): unknown;
  on(event: 'packetCreate', listener: (packet: { type: string; data?: unknown }) => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  close(discard?: boolean): unknown;
}

/**
 * The namespace of an outgoing Socket.IO CONNECT_ERROR packet (engine.io message "4…"), or null for
 * any other packet. Its text is `4` then, unless the namespace is `/`, the namespace and a comma.
 */
export function refusedNamespace(packet: { type: string; data?: unknown }): string | null {
  if (packet.type !== 'message' || typeof packet.data !== 'string' || !packet.data.startsWith('4'))
    return null;
  if (packet.data[1] !== '/') return '/';
  const comma = packet.data.indexOf(',');
  return comma < 0 ? packet.data.slice(1) : packet.data.slice(1, comma);
}

/**
 * Socket.IO with the same origin rule as HTTP CORS: a page on another site cannot open a socket in
 * the name of a browser that can reach the gateway (in single-user mode that would be enough to
 * start deliberations). In single-user mode, the same Host rule as HTTP (hostGuard) too.
 *
 * No connection is kept without a namespace that answered it: the default namespace `/` (which
 * serves nothing) refuses every connection, Socket.IO refuses names nobody serves, and a
 * connection refused on every namespace it asked for is closed at once (a served namespace's own
 * handshake refuses a missing or wrong key). A connection that joins none is closed after
 * SOCKET_CONNECT_TIMEOUT_MS. Every refusal on a namespace nobody serves counts as a failed
 * authentication of the client's address; the served namespace counts its missing and wrong keys,
 * and refuses an address over AUTH_FAILURES_PER_MINUTE before any key lookup, with the 429's
 * message (a refusal of the transport itself would reach the client as a bare "websocket error").
 */
export class OriginCheckedIoAdapter extends IoAdapter {
  private readonly trusted: string[] | null;

  constructor(
    app: INestApplicationContext,
    private readonly settings: HostSettings,
    private readonly limiter?: SocketAddressLimiter,
  ) {
    super(app);
    this.trusted = trustedHostnames(settings);
  }

  override createIOServer(port: number, options?: ServerOptions): Server {
    const allowed = this.settings.corsOrigins;
    const server = super.createIOServer(port, {
      ...options,
      connectTimeout: SOCKET_CONNECT_TIMEOUT_MS,
      cors: { origin: allowed.length > 0 ? allowed : false },
      allowRequest: (req: IncomingMessage, callback: (err: string | null, success: boolean) => void) => {
        if (!hostAllowed(req.headers.host, this.trusted))
          return callback(hostRefusal(req.headers.host), false);
        callback(null, originAllowed(req.headers.origin, req.headers.host, allowed));
      },
    }) as Server;
    // The namespaces created after the server (by the gateways) are the served ones.
    const served = new Set<string>();
    /** Per connection, how many of its sockets are connected to a namespace now. */
    const joined = new WeakMap<object, number>();
    server.on('new_namespace', (namespace) => {
      served.add(namespace.name);
      namespace.on('connection', (socket: Socket) => {
        joined.set(socket.conn, (joined.get(socket.conn) ?? 0) + 1);
        socket.once('disconnect', () => joined.set(socket.conn, (joined.get(socket.conn) ?? 1) - 1));
      });
    });
    server
      .of('/')
      .use((_socket, next) =>
        next(
          new Error(
            `namespace / serves nothing: connect to ${[...served].join(', ') || 'a served namespace'}`,
          ),
        ),
      );
    server.engine.on('connection', (connection: RawConnection) => {
      writeEachTurnAtOnce(connection);
      connection.on('packetCreate', (packet) => {
        const namespace = refusedNamespace(packet);
        if (namespace === null) return;
        if (!served.has(namespace) && this.limiter)
          void this.limiter.recordAuthFailure(this.limiter.clientAddress(connection.request));
        if ((joined.get(connection) ?? 0) === 0) closeRefused(connection);
      });
    });
    return server;
  }
}

/** Closes a connection once its refusal is written, and drops it if its client does not take it. */
function closeRefused(connection: RawConnection): void {
  // Once this turn's writes have gone out with the refusal in them.
  setImmediate(() => {
    if (connection.readyState !== 'open') return;
    connection.close();
    const drop = setTimeout(() => {
      if (connection.readyState !== 'closed') connection.close(true);
    }, REFUSAL_GRACE_MS);
    drop.unref();
    connection.once('close', () => clearTimeout(drop));
  });
}

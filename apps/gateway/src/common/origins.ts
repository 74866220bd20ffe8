import type { INestApplicationContext } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import type { IncomingMessage } from 'node:http';
import type { Server, ServerOptions } from 'socket.io';

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

/**
 * Socket.IO with the same origin rule as HTTP CORS: a page on another site cannot open a socket in
 * the name of a browser that can reach the gateway (in single-user mode that would be enough to
 * start deliberations).
 */
export class OriginCheckedIoAdapter extends IoAdapter {
  constructor(
    app: INestApplicationContext,
    private readonly allowed: string[],
  ) {
    super(app);
  }

  override createIOServer(port: number, options?: ServerOptions): Server {
    return super.createIOServer(port, {
      ...options,
      cors: { origin: this.allowed.length > 0 ? this.allowed : false },
      allowRequest: (req: IncomingMessage, callback: (err: string | null, success: boolean) => void) =>
        callback(null, originAllowed(req.headers.origin, req.headers.host, this.allowed)),
    }) as Server;
  }
}

import type { Socket as NetSocket } from 'node:net';

/** What this needs of an engine.io connection: its `flush` event and its transport. */
export interface EngineConnection {
  on(event: 'flush', listener: () => void): unknown;
  readonly transport: unknown;
}

/** The TCP socket under a connection's WebSocket transport; null for HTTP long-polling. */
function tcpSocketOf(connection: EngineConnection): NetSocket | null {
  const transport = connection.transport as { name?: unknown; socket?: { _socket?: unknown } } | null;
  if (transport?.name !== 'websocket') return null;
  const tcp = transport.socket?._socket as Partial<NetSocket> | undefined;
  return tcp && typeof tcp.cork === 'function' && typeof tcp.uncork === 'function'
    ? (tcp as NetSocket)
    : null;
}

/**
 * Whatever a connection sends in one turn of the event loop leaves in one write. engine.io hands
 * each packet to its WebSocket as a frame of its own, and the socket writes each frame at once: a
 * subscriber that follows many deliberations (a batch's page, a benchmark's client) got one system
 * call and one TCP segment per event. The TCP socket is corked when engine.io flushes and uncorked
 * once the turn's callbacks have run (setImmediate), so the frames of that turn go out together.
 * engine.io holds the packets that come while a write is in flight and flushes them together when
 * it completes: a busy connection writes about twice per turn, whatever it sends.
 */
export function writeEachTurnAtOnce(connection: EngineConnection): void {
  let corked: NetSocket | null = null;
  connection.on('flush', () => {
    if (corked) return;
    const tcp = tcpSocketOf(connection);
    if (!tcp || tcp.destroyed) return;
    corked = tcp;
    tcp.cork();
    setImmediate(() => {
      corked = null;
      tcp.uncork();
    });
  });
}

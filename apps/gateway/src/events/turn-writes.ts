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

/** The TCP socket each connection holds corked for the rest of this turn. */
const heldThisTurn = new WeakMap<EngineConnection, NetSocket>();

/** Sends now what a connection holds for its turn's one write; false when it holds nothing. */
export function sendHeldWrites(connection: EngineConnection): boolean {
  const tcp = heldThisTurn.get(connection);
  if (!tcp) return false;
  heldThisTurn.delete(connection);
  tcp.uncork();
  return true;
}

/**
 * Whatever a connection sends in one turn of the event loop leaves in one write. engine.io hands
 * each packet to its WebSocket as a frame of its own, and the socket writes each frame at once: a
 * subscriber that follows many deliberations (a batch's page, a benchmark's client) got one system
 * call and one TCP segment per event. The TCP socket is corked when engine.io flushes and uncorked
 * once the turn's callbacks have run (setImmediate), so the frames of that turn go out together.
 * engine.io holds the packets that come while a write is in flight and flushes them together when
 * it completes: a busy connection writes about twice per turn, whatever it sends. Whoever measures
 * the client's backlog sends the held frames first once they pass its high-water mark
 * (sendHeldWrites), so a turn's batch is never mistaken for a client that does not read.
 */
export function writeEachTurnAtOnce(connection: EngineConnection): void {
  connection.on('flush', () => {
    if (heldThisTurn.has(connection)) return;
    const tcp = tcpSocketOf(connection);
    if (!tcp || tcp.destroyed) return;
    heldThisTurn.set(connection, tcp);
    tcp.cork();
    setImmediate(() => {
      if (heldThisTurn.get(connection) === tcp) sendHeldWrites(connection);
    });
  });
}

import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo, Socket as NetSocket } from 'node:net';
import { Server, type Socket } from 'socket.io';
import { io as connect, type Socket as ClientSocket } from 'socket.io-client';
import { sendHeldWrites, writeEachTurnAtOnce, type EngineConnection } from './turn-writes';
import { sleep } from '../../../../test/support/wait';

const EVENTS = 50;

interface Stack {
  http: HttpServer;
  io: Server;
  client: ClientSocket;
  server: Socket;
}

/** A real Socket.IO server and client on loopback (WebSocket unless asked), with or without the hook. */
async function stack(hooked: boolean, transport: 'websocket' | 'polling' = 'websocket'): Promise<Stack> {
  const http = createServer();
  const io = new Server(http, { transports: [transport] });
  if (hooked) io.engine.on('connection', (connection: EngineConnection) => writeEachTurnAtOnce(connection));
  const connected = new Promise<Socket>((resolve) => io.on('connection', resolve));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const client = connect(`http://127.0.0.1:${port}`, { transports: [transport], forceNew: true });
  return { http, io, client, server: await connected };
}

async function close({ http, io, client }: Stack): Promise<void> {
  const engine = client.io.engine;
  const closed = new Promise<void>((resolve) => engine.once('close', () => resolve()));
  client.close();
  await closed;
  await new Promise<void>((resolve) => io.close(() => resolve()));
  http.close();
}

/** Emits EVENTS events in one turn; answers the writes the server's TCP socket made and what the client got. */
async function burst(s: Stack): Promise<{ writes: number; received: number[] }> {
  const tcp = (s.server.conn.transport as unknown as { socket: { _socket: NetSocket } }).socket._socket;
  const writeGeneric = jest.spyOn(tcp as unknown as { _writeGeneric: () => void }, '_writeGeneric');
  const received: number[] = [];
  const all = new Promise<void>((resolve) =>
    s.client.on('progress', (n: number) => {
      received.push(n);
      if (received.length === EVENTS) resolve();
    }),
  );
  for (let n = 1; n <= EVENTS; n++) s.server.emit('progress', n);
  await all;
  const writes = writeGeneric.mock.calls.length;
  writeGeneric.mockRestore();
  return { writes, received };
}

describe('writeEachTurnAtOnce', () => {
  it('sends what a connection emits in one turn in a couple of writes, in order, where it took one write per event', async () => {
    const plain = await stack(false);
    const hooked = await stack(true);
    try {
      const before = await burst(plain);
      const after = await burst(hooked);
      const inOrder = Array.from({ length: EVENTS }, (_, i) => i + 1);
      expect(before.received).toEqual(inOrder);
      expect(after.received).toEqual(inOrder);
      // The measure itself: without the hook each frame is a write of its own.
      expect(before.writes).toBeGreaterThanOrEqual(EVENTS / 2);
      expect(after.writes).toBeLessThanOrEqual(3);
    } finally {
      await close(plain);
      await close(hooked);
    }
  });

  it('sends what it holds at once when asked (a backlog past its high-water mark), and only once', async () => {
    const hooked = await stack(true);
    try {
      const tcp = (hooked.server.conn.transport as unknown as { socket: { _socket: NetSocket } }).socket
        ._socket;
      const got = new Promise<string>((resolve) => hooked.client.on('big', resolve));
      // Once the connection's earlier writes are done, the next emit goes straight to the socket.
      while (
        !(hooked.server.conn.transport as unknown as { writable: boolean }).writable ||
        tcp.writableCorked > 0
      ) {
        await sleep(5);
      }
      hooked.server.emit('big', 'x'.repeat(200_000));
      // Held for the turn's one write: all of it counts as not yet sent.
      expect(tcp.writableCorked).toBe(1);
      expect(tcp.writableLength).toBeGreaterThan(200_000);
      expect(sendHeldWrites(hooked.server.conn)).toBe(true);
      expect(tcp.writableCorked).toBe(0);
      expect(sendHeldWrites(hooked.server.conn)).toBe(false);
      expect((await got).length).toBe(200_000);
      // The turn's own uncork then finds nothing to do (the socket is not uncorked twice).
      await new Promise((resolve) => setImmediate(resolve));
      expect(tcp.writableCorked).toBe(0);
    } finally {
      await close(hooked);
    }
  });

  it('leaves long-polling connections alone and still delivers', async () => {
    const polling = await stack(true, 'polling');
    try {
      const received: number[] = [];
      const all = new Promise<void>((resolve) =>
        polling.client.on('progress', (n: number) => {
          received.push(n);
          if (received.length === 5) resolve();
        }),
      );
      for (let n = 1; n <= 5; n++) polling.server.emit('progress', n);
      await all;
      expect(received).toEqual([1, 2, 3, 4, 5]);
    } finally {
      // Long-polling sends its close packet in a request of its own: close waits for it to be done.
      await close(polling);
    }
  });
});

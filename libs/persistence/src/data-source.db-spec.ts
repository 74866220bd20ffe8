import { createServer, type Server, type Socket } from 'node:net';
import { createDataSource } from './data-source';
import { isStoreUnavailable } from './unavailable';

/**
 * A server that takes TCP connections and never says a word: what a PostgreSQL behind a network
 * partition looks like to a client whose connection gets through (no refusal, no reply).
 */
async function silentServer(): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, sockets };
}

describe('dataSourceOptions', () => {
  it('a connection that gets no answer fails as unavailable after the connect timeout, instead of hanging', async () => {
    const { server, port, sockets } = await silentServer();
    try {
      const dataSource = createDataSource(`postgres://postgres@127.0.0.1:${port}/conclave`, 1, 300);
      const error: unknown = await dataSource.initialize().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).not.toBeNull();
      expect(isStoreUnavailable(error)).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 20_000);

  it('a query that waits longer than the connect timeout for a free connection of the pool fails as unavailable', async () => {
    const dataSource = createDataSource('postgres://postgres@127.0.0.1:5432/postgres', 1, 300);
    await dataSource.initialize();
    try {
      // The pool's only connection is busy for a while.
      const busy = dataSource.query('SELECT pg_sleep(3)');
      const error: unknown = await dataSource.query('SELECT 1').then(
        () => null,
        (e: unknown) => e,
      );
      await busy;
      expect(error).not.toBeNull();
      expect(isStoreUnavailable(error)).toBe(true);
    } finally {
      await dataSource.destroy();
    }
  }, 20_000);
});

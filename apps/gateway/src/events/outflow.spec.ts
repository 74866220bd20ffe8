import { EventEmitter } from 'node:events';
import { Outflow, outflowLimits } from './outflow';
import { sleep } from '../../../../test/support/wait';

const LIMITS = { highWaterBytes: 1000, maxBufferedBytes: 10_000, drainTimeoutMs: 300 };

function setup() {
  const client = { buffered: 0, slow: [] as string[], progress: new EventEmitter() };
  const outflow = new Outflow(
    () => client.buffered,
    LIMITS,
    (reason) => client.slow.push(reason),
    (wake) => {
      client.progress.on('drain', wake);
      return () => client.progress.off('drain', wake);
    },
  );
  return { client, outflow };
}

describe('Outflow', () => {
  it('lets the sender go on while the backlog is under the high-water mark', () => {
    const { client, outflow } = setup();
    client.buffered = 1000;
    expect(outflow.room()).toBeNull();
    expect(client.slow).toEqual([]);
  });

  it('holds the sender above the high-water mark until the client reads, on a drain event', async () => {
    const { client, outflow } = setup();
    client.buffered = 5000;
    const wait = outflow.room();
    expect(wait).not.toBeNull();
    expect(outflow.room()).toBe(wait); // one wait per client
    let released = false;
    void wait?.then(() => (released = true));
    await sleep(20);
    expect(released).toBe(false);
    client.buffered = 200;
    client.progress.emit('drain');
    await wait;
    expect(released).toBe(true);
    expect(client.slow).toEqual([]);
    expect(client.progress.listenerCount('drain')).toBe(0);
  });

  it('notices a read without a drain event too (polling)', async () => {
    const { client, outflow } = setup();
    client.buffered = 5000;
    const wait = outflow.room();
    setTimeout(() => (client.buffered = 0), 30);
    await wait;
    expect(client.slow).toEqual([]);
  });

  it('closes a client whose backlog passes the hard bound, at once', () => {
    const { client, outflow } = setup();
    client.buffered = 10_001;
    expect(outflow.room()).toBeNull();
    expect(client.slow).toEqual([expect.stringMatching(/10001 bytes unread, more than 10000/)]);
    // Once closed, it is not closed again.
    expect(outflow.room()).toBeNull();
    expect(client.slow).toHaveLength(1);
  });

  it('closes a client that has not read within the drain timeout, and releases the sender', async () => {
    const { client, outflow } = setup();
    client.buffered = 5000;
    const started = Date.now();
    await outflow.room();
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.drainTimeoutMs - 5);
    expect(client.slow).toEqual([expect.stringMatching(/unread for 300 ms/)]);
  });

  it('closes a waiting client whose backlog grows past the bound meanwhile (writes that do not wait)', async () => {
    const { client, outflow } = setup();
    client.buffered = 5000;
    const wait = outflow.room();
    client.buffered = 20_000;
    await wait;
    expect(client.slow).toEqual([expect.stringMatching(/more than 10000/)]);
  });

  it('releases the sender when the client goes away', async () => {
    const { client, outflow } = setup();
    client.buffered = 5000;
    const wait = outflow.room();
    outflow.stop();
    await wait;
    expect(client.slow).toEqual([]);
    expect(outflow.room()).toBeNull();
  });

  it('keeps the high-water mark under the hard bound', () => {
    expect(outflowLimits({ maxBufferedBytes: 65_536, drainTimeoutMs: 1 }).highWaterBytes).toBe(32_768);
    expect(outflowLimits({ maxBufferedBytes: 4 << 20, drainTimeoutMs: 1 }).highWaterBytes).toBe(65_536);
  });
});

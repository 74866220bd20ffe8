import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './support/private-postgres';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/** A Redis server of this test's own, so it can be killed without touching the shared one. */
async function privateRedis(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}`).then(
      () => true,
      (error: { cause?: { code?: string } }) => error.cause?.code !== 'ECONNREFUSED',
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await sleep(50);
  }
  return { url: `redis://127.0.0.1:${port}`, child };
}

const killed = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()).kill('SIGKILL'));

/**
 * Redis goes away under a running gateway and worker: ioredis, BullMQ and Nest report it, and
 * every line they write must stay one JSON object (log collectors parse lines; a stack dump
 * becomes dozens of unparseable entries, and an outage must not flood the log).
 */
describe('logs during a Redis outage', () => {
  const stack = new TestStack({ LOG_LEVEL: 'info' });
  let redis: { url: string; child: ChildProcess };
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    await stack.start({ worker: false });
    redis = await privateRedis();
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...children, redis.child].map(killed));
    await stack.stop();
  }, 30_000);

  it('gateway and worker write only JSON lines, and not a flood, while Redis is down', async () => {
    const env = { REDIS_URL: redis.url, LOG_LEVEL: 'info' };
    const gateway = await stack.spawnGateway(env);
    const worker = await stack.spawnWorker(env);
    children.push(gateway.child, worker);
    const outputStart = new Map(children.map((c) => [c, (stack.outputs.get(c) ?? '').length]));

    await killed(redis.child);
    // Requests that need Redis while it is gone: an enqueue, the readiness probe, metrics.
    const deliberation = await fetch(`${gateway.baseUrl}/api/deliberations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'Is Redis there?', councilModels: ['sim/a', 'sim/b'] }),
    });
    expect(deliberation.status).toBe(503);
    await fetch(`${gateway.baseUrl}/health/ready`);
    await fetch(`${gateway.baseUrl}/metrics`);
    await sleep(8_000);

    const report = children.map((child) => {
      const output = stack.outputs.get(child) ?? '';
      const lines = output.split('\n').filter((line) => line.trim() !== '');
      const notJson = lines.filter((line) => {
        try {
          const value: unknown = JSON.parse(line);
          return typeof value !== 'object' || value === null;
        } catch {
          return true;
        }
      });
      // Reconnection attempts every few hundred ms must not each write a line.
      const during = output
        .slice(outputStart.get(child) ?? 0)
        .split('\n')
        .filter((line) => line.trim() !== '').length;
      return { notJson: notJson.slice(0, 20), floods: during >= 40 ? during : false };
    });
    expect(report).toEqual(children.map(() => ({ notJson: [], floods: false })));
  }, 90_000);
});

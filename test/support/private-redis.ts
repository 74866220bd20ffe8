import { spawn, type ChildProcess } from 'node:child_process';
import IORedis from 'ioredis';
import { freePort } from './private-postgres';

/**
 * A Redis of one test's own on a free port, without persistence, to kill and bring back (empty)
 * while the shared one on 6379 stays up.
 */
export class PrivateRedis {
  private child: ChildProcess | null = null;

  /** Not started: `start()` it (or use `create()`, which picks a free port and starts it). */
  constructor(readonly port: number) {}

  static async create(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts it (empty) and resolves once it answers PING. */
  async start(): Promise<void> {
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const probe = new IORedis(this.port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 100 });
    probe.on('error', () => undefined); // connect() rejects with it while the server starts
    try {
      for (let i = 0; ; i++) {
        try {
          await probe.connect();
          await probe.ping();
          return;
        } catch (error) {
          if (i > 100) throw error;
          probe.disconnect();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    } finally {
      probe.disconnect();
    }
  }

  /** Kills it at once (SIGKILL): what it held is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    await new Promise((resolve) => child.once('exit', resolve).kill('SIGKILL'));
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import IORedis from 'ioredis';

/**
 * A Redis of a test's own (no persistence) on a port of its own, to kill and bring back empty
 * while the shared one on 6379 stays up.
 */
export class PrivateRedis {
  child: ChildProcess | null = null;
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

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

  /** SIGKILL: everything it held is gone (it keeps nothing on disk). */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => child.once('exit', resolve).kill('SIGKILL'));
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { freePort } from './private-postgres';

/** Debian's `pgbouncer` (installed by .ci/run when missing); null when it is not installed. */
export function pgbouncerBinary(): string | null {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = path.join(dir, 'pgbouncer');
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

export interface PgBouncerOptions {
  /** PostgreSQL behind it (host and port of a trust-authenticated server). */
  upstream: { host: string; port: number };
  poolMode: 'session' | 'transaction';
  /** Server connections per database and user: small, so that clients share them. */
  defaultPoolSize: number;
  maxClientConn?: number;
  /**
   * Extra database entries, name → libpq-style settings after host and port (e.g.
   * `dbname=conclave_t_x pool_size=1`). Every other database name passes through as itself.
   */
  databases?: Record<string, string>;
}

/**
 * A PgBouncer of one test (or benchmark) on a free loopback port: its own ini and user list in a
 * temporary directory, trust authentication for the `postgres` user, logs to stderr (kept here).
 * PgBouncer refuses to run as root: as root it is started with `-u nobody`, which it switches to
 * after reading its configuration.
 */
export class PgBouncer {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
  ) {}

  static async start(options: PgBouncerOptions): Promise<PgBouncer> {
    const binary = pgbouncerBinary();
    if (!binary)
      throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer; .ci/run does it)');
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        return await PgBouncer.startOn(binary, port, options);
      } catch (error) {
        // Another process took the free port between freePort() and PgBouncer's bind: try another.
        if (attempt === 3 || !/Address already in use|bind/i.test(String(error))) throw error;
      }
    }
  }

  private static async startOn(binary: string, port: number, options: PgBouncerOptions): Promise<PgBouncer> {
    const dir = await mkdtemp(path.join(tmpdir(), 'conclave-pgbouncer-'));
    const { host, port: upstreamPort } = options.upstream;
    const databases = Object.entries(options.databases ?? {}).map(
      ([name, settings]) => `${name} = host=${host} port=${upstreamPort} ${settings}`,
    );
    const ini = [
      '[databases]',
      ...databases,
      // The fallback: any other database name reaches the database of that name.
      `* = host=${host} port=${upstreamPort}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      'admin_users = postgres',
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.defaultPoolSize}`,
      `max_client_conn = ${options.maxClientConn ?? 400}`,
      'logfile =',
      'pidfile =',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n');
    await writeFile(path.join(dir, 'pgbouncer.ini'), ini);
    await writeFile(path.join(dir, 'userlist.txt'), '"postgres" ""\n');
    const args = [...(userInfo().uid === 0 ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')];
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const bouncer = new PgBouncer(child, dir, port);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`pgbouncer did not start:\n${bouncer.output}`)),
          15_000,
        );
        const onData = (chunk: Buffer) => {
          bouncer.output = (bouncer.output + chunk.toString()).slice(-65_536);
          if (/process up/.test(bouncer.output)) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`pgbouncer exited (${code}):\n${bouncer.output}`));
        });
      });
    } catch (error) {
      await bouncer.stop();
      throw error;
    }
    return bouncer;
  }

  /** Its process id (the benchmark counts its CPU). */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** A DATABASE_URL through this PgBouncer. */
  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** A command of PgBouncer's admin console (SHOW POOLS, SHOW SERVERS, SHOW CLIENTS, SHOW VERSION). */
  async admin<T = Record<string, unknown>>(command: string): Promise<T[]> {
    const client = new Client({ connectionString: this.url('pgbouncer') });
    await client.connect();
    try {
      // No parameters: the admin console speaks the simple query protocol only.
      return (await client.query(command)).rows as T[];
    } finally {
      await client.end();
    }
  }

  /** What PgBouncer logged (the last 64 kB). */
  log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

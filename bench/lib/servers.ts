import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { appendFile, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import IORedis from 'ioredis';
import { freePort } from '../../test/support/private-postgres';

const run = promisify(execFile);

/** `/usr/lib/postgresql/<newest>/bin`, or PG_BIN; null when PostgreSQL's programs are not installed. */
export function postgresBinDir(): string | null {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? path.join(root, versions[0], 'bin') : null;
}

export function redisServerBinary(): string | null {
  for (const candidate of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * The benchmark's own PostgreSQL cluster: a fresh initdb with the server's default durability
 * (fsync and synchronous commit on), on a free port. Its own so that a worker whose pool grows with
 * WORKER_CONCURRENCY (up to thousands of connections) cannot take the connection slots of a shared
 * server, and so that nobody else's queries share it. As root its programs run as `postgres`.
 */
export class BenchPostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
    private readonly asUser: string | null,
  ) {}

  static async create(maxConnections: number): Promise<BenchPostgres> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('no PostgreSQL programs found (set PG_BIN)');
    const asUser = userInfo().uid === 0 ? 'postgres' : null;
    const dir = await mkdtemp(path.join(tmpdir(), 'conclave-bench-pg-'));
    const cluster = new BenchPostgres(dir, await freePort(), bin, asUser);
    try {
      if (asUser) {
        const { stdout: uid } = await run('id', ['-u', asUser]);
        const { stdout: gid } = await run('id', ['-g', asUser]);
        await chown(dir, Number(uid.trim()), Number(gid.trim()));
      }
      await cluster.exec('initdb', ['-D', cluster.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8']);
      await appendFile(
        path.join(cluster.dataDir, 'postgresql.conf'),
        [
          '',
          `port = ${cluster.port}`,
          `listen_addresses = '127.0.0.1'`,
          `unix_socket_directories = '${dir}'`,
          `max_connections = ${maxConnections}`,
          'shared_buffers = 256MB',
          // statement counts per deliberation for the reports; negligible overhead
          "shared_preload_libraries = 'pg_stat_statements'",
          '',
        ].join('\n'),
      );
      await cluster.exec('pg_ctl', ['-D', cluster.dataDir, '-l', cluster.logFile, '-w', '-t', '60', 'start']);
    } catch (error) {
      await cluster.destroy();
      throw error;
    }
    return cluster;
  }

  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  private get logFile(): string {
    return path.join(this.dir, 'server.log');
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** The postmaster's pid (first line of postmaster.pid). */
  pid(): number | null {
    try {
      return Number(readFileSync(path.join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
    } catch {
      return null;
    }
  }

  /** Stops the server (fast shutdown: sessions are disconnected), keeping its data. */
  async stop(): Promise<void> {
    await this.exec('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** Starts it again after stop(). */
  async start(): Promise<void> {
    await this.exec('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '60', 'start']);
  }

  /** Stops the server at once and removes its directory. Never throws. */
  async destroy(): Promise<void> {
    if (existsSync(path.join(this.dataDir, 'postmaster.pid'))) {
      await this.exec('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(
        () => undefined,
      );
    }
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  private async exec(program: string, args: string[]): Promise<string> {
    const file = path.join(this.bin, program);
    const [command, argv] = this.asUser
      ? ['runuser', ['-u', this.asUser, '--', file, ...args]]
      : [file, args];
    const { stdout } = await run(command, argv, { cwd: this.dir, timeout: 120_000 });
    return stdout;
  }
}

/** The benchmark's own Redis (no persistence, noeviction), on a free port. */
export class BenchRedis {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {}

  static async create(): Promise<BenchRedis> {
    const binary = redisServerBinary();
    if (!binary) throw new Error('no redis-server found');
    const port = await freePort();
    const child = spawn(
      binary,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
        '--maxclients',
        '10000',
      ],
      { stdio: 'ignore' },
    );
    const server = new BenchRedis(child, port);
    const deadline = Date.now() + 15_000;
    for (;;) {
      const probe = new IORedis(server.url(), {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return server;
      } catch (error) {
        probe.disconnect();
        if (Date.now() > deadline || child.exitCode !== null) {
          server.destroy();
          throw new Error(`redis-server did not start: ${String(error)}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  destroy(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

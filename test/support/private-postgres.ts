import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The newest Debian PostgreSQL (`/usr/lib/postgresql/<version>/bin`), or PG_BIN when set. */
function binDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL binaries under ${root} (set PG_BIN)`);
  return path.join(root, versions[0], 'bin');
}

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A PostgreSQL cluster of one test's own, on a free port of 127.0.0.1 with trust authentication,
 * so the test can stop and start it without disturbing the shared server on 5432. PostgreSQL
 * refuses to run as root: as root its programs run as the `postgres` user.
 */
export class PrivatePostgres {
  private destroyed = false;
  /** Should the test process end without destroy() (a crash, a forgotten afterAll). */
  private readonly onExit = () => this.destroySync();

  private constructor(
    readonly dir: string,
    private readonly bin: string,
    private readonly asUser: string | null,
    private portNumber = 0,
  ) {}

  get port(): number {
    return this.portNumber;
  }

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  private get logFile(): string {
    return path.join(this.dir, 'server.log');
  }

  /** initdb in a fresh temporary directory, then start on a free port. */
  static async create(): Promise<PrivatePostgres> {
    const asUser = userInfo().uid === 0 ? 'postgres' : null;
    const dir = await mkdtemp(path.join(tmpdir(), 'conclave-pg-'));
    const cluster = new PrivatePostgres(dir, binDir(), asUser);
    process.once('exit', cluster.onExit);
    try {
      if (asUser) {
        const { stdout } = await run('id', ['-u', asUser]);
        const { stdout: gid } = await run('id', ['-g', asUser]);
        await chown(dir, Number(stdout.trim()), Number(gid.trim()));
      }
      await cluster.exec('initdb', [
        '-D',
        cluster.dataDir,
        '-A',
        'trust',
        '-U',
        'postgres',
        '-E',
        'UTF8',
        '--no-sync',
      ]);
      await appendFile(
        path.join(cluster.dataDir, 'postgresql.conf'),
        [
          '',
          `listen_addresses = '127.0.0.1'`,
          `unix_socket_directories = '${dir}'`,
          'fsync = off',
          'synchronous_commit = off',
          'full_page_writes = off',
          'max_connections = 200',
          '',
        ].join('\n'),
      );
      // The port is free when asked for, yet another process may take it first: then another one.
      for (let attempt = 1; ; attempt += 1) {
        cluster.portNumber = await freePort();
        try {
          await cluster.start();
          break;
        } catch (error) {
          if (attempt === 3) throw error;
        }
      }
    } catch (error) {
      await cluster.destroy();
      throw error;
    }
    return cluster;
  }

  /** A connection URL for `database` on this cluster. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    try {
      await this.exec('pg_ctl', [
        '-D',
        this.dataDir,
        '-l',
        this.logFile,
        '-o',
        `-p ${this.port}`,
        '-w',
        '-t',
        '30',
        'start',
      ]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${await this.log()}`);
    }
  }

  /** Fast shutdown: open sessions are terminated, as when a server goes away. */
  async stop(): Promise<void> {
    await this.exec('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '30', 'stop']);
  }

  async running(): Promise<boolean> {
    try {
      await this.exec('pg_ctl', ['-D', this.dataDir, 'status']);
      return true;
    } catch {
      return false;
    }
  }

  /** Stops the server (immediately) if it runs, and removes its directory. Never throws. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    process.removeListener('exit', this.onExit);
    if (existsSync(path.join(this.dataDir, 'postmaster.pid'))) {
      await this.exec('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(
        () => undefined,
      );
    }
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  private destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    const [command, argv] = this.command('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    if (existsSync(path.join(this.dataDir, 'postmaster.pid'))) spawnSync(command, argv, { stdio: 'ignore' });
    rmSync(this.dir, { recursive: true, force: true });
  }

  async log(): Promise<string> {
    return readFile(this.logFile, 'utf8').catch(() => '');
  }

  private command(program: string, args: string[]): [string, string[]] {
    const file = path.join(this.bin, program);
    return this.asUser ? ['runuser', ['-u', this.asUser, '--', file, ...args]] : [file, args];
  }

  private async exec(program: string, args: string[]): Promise<string> {
    const [command, argv] = this.command(program, args);
    const { stdout } = await run(command, argv, { cwd: this.dir, timeout: 60_000 });
    return stdout;
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDataSource } from '@conclave/persistence';
import { freePort } from './support/private-postgres';
import { dropDatabases, SHARED_POSTGRES } from './support/database';

/**
 * `npm start` (scripts/start.js) on a laptop where PostgreSQL and Redis are not running: with
 * Docker it starts the compose file's `postgres` and `redis` itself and goes on; without it, it
 * says what to install and exits non-zero. Docker is not installed here: a fake `docker` records
 * its arguments and, for `compose up`, starts stand-ins that forward the requested ports to the
 * real PostgreSQL and Redis after a moment (as containers take a moment to accept connections).
 */

const ROOT = path.resolve(__dirname, '..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');

interface StartScript {
  installAdvice(platform: string, missing: { name: string }[]): string[];
}

const FAKE_DOCKER = `#!${process.execPath}
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const args = process.argv.slice(2);
fs.appendFileSync(process.env.FAKE_DOCKER_LOG, JSON.stringify({
  args,
  postgresPort: process.env.CONCLAVE_POSTGRES_PORT ?? null,
  redisPort: process.env.CONCLAVE_REDIS_PORT ?? null,
}) + '\\n');
if (args[0] !== 'compose') process.exit(1);
if (args[1] === 'version') {
  console.log('Docker Compose version v2.99.0 (fake)');
  process.exit(0);
}
const up = args.indexOf('up');
if (up < 0) process.exit(0);
if (process.env.FAKE_DOCKER_UP_EXIT) {
  console.error('Cannot connect to the Docker daemon at unix:///var/run/docker.sock.');
  process.exit(Number(process.env.FAKE_DOCKER_UP_EXIT));
}
if (process.env.FAKE_DOCKER_START === 'nothing') process.exit(0);
const targets = {
  postgres: [process.env.CONCLAVE_POSTGRES_PORT, '5432'],
  redis: [process.env.CONCLAVE_REDIS_PORT, '6379'],
};
for (const service of args.slice(up + 2)) {
  const [listen, target] = targets[service];
  const child = spawn(process.execPath, [process.env.FAKE_FORWARDER, listen, target], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  fs.appendFileSync(process.env.FAKE_DOCKER_PIDS, child.pid + '\\n');
}
console.log(' ✔ Container conclave-postgres-1  Started (fake)');
`;

/** A container's published port: accepts connections only after a moment, then forwards them. */
const FORWARDER = `
const net = require('node:net');
const [listen, target] = process.argv.slice(2).map(Number);
setTimeout(() => {
  net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  }).listen(listen, '127.0.0.1');
}, 1500);
// However the test ends, the stand-in does not outlive it by much.
setTimeout(() => process.exit(0), 120000);
`;

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Resolves once the output matches (rejects if the script exits first). */
  until: (pattern: RegExp) => Promise<RegExpMatchArray>;
}

describe('npm start when PostgreSQL and Redis are not running', () => {
  let dir: string;
  let fakeBin: string;
  let emptyBin: string;
  let log: string;
  let pids: string;
  const started: ChildProcess[] = [];
  const databases: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'conclave-start-'));
    fakeBin = path.join(dir, 'bin');
    emptyBin = path.join(dir, 'empty');
    await mkdir(fakeBin);
    await mkdir(emptyBin);
    await writeFile(path.join(fakeBin, 'docker'), FAKE_DOCKER);
    await chmod(path.join(fakeBin, 'docker'), 0o755);
    await writeFile(path.join(dir, 'forwarder.js'), FORWARDER);
    log = path.join(dir, 'docker.log');
    pids = path.join(dir, 'pids');
  });

  afterEach(async () => {
    for (const child of started.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-(child.pid ?? 0), 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    const forwarders = (await readFile(pids, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
    for (const pid of forwarders) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(pids, { force: true });
    await rm(log, { force: true });
  });

  afterAll(async () => {
    await dropDatabases(...databases.map((name) => `${SHARED_POSTGRES}/${name}`));
    await rm(dir, { recursive: true, force: true });
  });

  /** The environment of a reader's shell: none of this machine's database settings. */
  const baseEnv = (): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (value === undefined || /^(DATABASE_|REDIS_|CONCLAVE_|PORT$|AUTH_MODE$)/.test(key)) continue;
      env[key] = value;
    }
    return env;
  };

  async function start(env: Record<string, string>): Promise<Started> {
    const child = spawn(process.execPath, ['scripts/start.js'], {
      cwd: ROOT,
      env: {
        ...baseEnv(),
        FAKE_DOCKER_LOG: log,
        FAKE_DOCKER_PIDS: pids,
        FAKE_FORWARDER: path.join(dir, 'forwarder.js'),
        PORT: String(await freePort()),
        REDIS_PREFIX: `t-start-${randomBytes(4).toString('hex')}`,
        ...env,
      },
      // Its own process group: migrate, vite and the apps it starts go with it.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const listeners: (() => void)[] = [];
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const listener of listeners) listener();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    const until = (pattern: RegExp) =>
      new Promise<RegExpMatchArray>((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) resolve(match);
        };
        listeners.push(check);
        check();
        void exited.then((code) => {
          check();
          reject(new Error(`start.js exited (${code}) before ${pattern}:\n${output}`));
        });
      });
    return { child, output: () => output, exited, until };
  }

  const dockerCalls = async () =>
    (await readFile(log, 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map(
        (line) =>
          JSON.parse(line) as { args: string[]; postgresPort: string | null; redisPort: string | null },
      );

  const unreachable = async () => {
    const database = `conclave_start_${randomBytes(4).toString('hex')}`;
    databases.push(database);
    return {
      database,
      pgPort: await freePort(),
      redisPort: await freePort(),
    };
  };

  it('with Docker: runs `docker compose up -d postgres redis` on their ports, waits for them, then migrates', async () => {
    const { database, pgPort, redisPort } = await unreachable();
    const run = await start({
      PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/${database}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    // The migration ran through the "containers": the start went on past the check.
    await run.until(/applied migrations: InitialSchema/);
    const output = run.output();
    expect(output).toContain(
      `[conclave] cannot reach PostgreSQL (127.0.0.1:${pgPort}) and Redis (127.0.0.1:${redisPort}): ` +
        'starting them with Docker:  docker compose up -d postgres redis',
    );
    expect(output).toMatch(/\[conclave\] waiting up to 120 s for postgres and redis to accept connections/);
    expect(output).toContain(
      '[conclave] postgres and redis are up (they keep running after npm start stops; stop them with: docker compose stop postgres redis)',
    );
    expect(await dockerCalls()).toEqual([
      { args: ['compose', 'version'], postgresPort: null, redisPort: null },
      {
        args: ['compose', '-f', COMPOSE_FILE, 'up', '-d', 'postgres', 'redis'],
        postgresPort: String(pgPort),
        redisPort: String(redisPort),
      },
    ]);
    // The database it created and migrated, reached directly.
    const db = createDataSource(`postgres://postgres@127.0.0.1:5432/${database}`, 1);
    await db.initialize();
    try {
      const [row]: { n: number }[] = await db.query('SELECT count(*)::int AS n FROM typeorm_migrations');
      expect(row.n).toBeGreaterThan(0);
    } finally {
      await db.destroy();
    }
  });

  it('starts only the service that is missing (Redis here) and goes on', async () => {
    const { database, redisPort } = await unreachable();
    const run = await start({
      PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    await run.until(/\[conclave\] redis is up/);
    expect(run.output()).toContain(
      `[conclave] cannot reach Redis (127.0.0.1:${redisPort}): starting it with Docker:  docker compose up -d redis`,
    );
    expect((await dockerCalls()).map((c) => c.args)).toEqual([
      ['compose', 'version'],
      ['compose', '-f', COMPOSE_FILE, 'up', '-d', 'redis'],
    ]);
  });

  it('without Docker: says what to install and exits non-zero', async () => {
    const { database, pgPort, redisPort } = await unreachable();
    // Only an empty directory on PATH: no docker, no docker-compose.
    const run = await start({
      PATH: emptyBin,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/${database}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    expect(await run.exited).toBe(1);
    const output = run.output();
    expect(output).toContain(
      `[conclave] cannot reach PostgreSQL (127.0.0.1:${pgPort}) and Redis (127.0.0.1:${redisPort}), ` +
        'and Docker (docker compose or docker-compose) is not installed to start them.',
    );
    expect(output).toContain('install Docker (https://docs.docker.com/get-docker/) and run npm start again');
    if (process.platform === 'linux') {
      expect(output).toContain('sudo apt-get install -y postgresql redis-server');
      expect(output).toContain('DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/conclave npm start');
    }
    expect(output).not.toMatch(/applied migrations|starting gateway/);
    expect(await dockerCalls()).toEqual([]);
  });

  it('names the right commands for macOS, Linux and Windows', async () => {
    const { installAdvice } = (await import(path.join(ROOT, 'scripts', 'start.js'))) as StartScript;
    const both = [{ name: 'PostgreSQL' }, { name: 'Redis' }];
    expect(installAdvice('darwin', both).join('\n')).toMatch(
      /brew install postgresql@16 redis\n.*brew services start postgresql@16 && brew services start redis\n.*createuser" -s postgres/,
    );
    expect(installAdvice('linux', both).join('\n')).toMatch(
      /sudo apt-get install -y postgresql redis-server.*\n.*ALTER USER postgres PASSWORD 'postgres'/,
    );
    expect(installAdvice('win32', both).join('\n')).toMatch(
      /Install Docker Desktop .* starts PostgreSQL and Redis/,
    );
  });

  it('CONCLAVE_DOCKER names the docker command; services that never answer end the wait with a message', async () => {
    const { database, pgPort, redisPort } = await unreachable();
    const docker = path.join(fakeBin, 'docker');
    const run = await start({
      PATH: emptyBin,
      CONCLAVE_DOCKER: docker,
      CONCLAVE_START_WAIT_S: '2',
      FAKE_DOCKER_START: 'nothing',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/${database}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(
      `[conclave] PostgreSQL (127.0.0.1:${pgPort}) and Redis (127.0.0.1:${redisPort}) did not accept connections ` +
        `within 2 s after ${docker} compose up -d postgres redis. See: ${docker} compose logs postgres redis`,
    );
    expect((await dockerCalls()).map((c) => c.args)).toEqual([
      ['compose', 'version'],
      ['compose', '-f', COMPOSE_FILE, 'up', '-d', 'postgres', 'redis'],
    ]);
  });

  it('says so when `docker compose up` fails (Docker not running)', async () => {
    const { database, pgPort, redisPort } = await unreachable();
    const run = await start({
      PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      FAKE_DOCKER_UP_EXIT: '1',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/${database}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(
      '[conclave] docker compose up -d postgres redis failed (exit code 1). Is Docker running?',
    );
  });

  it('checks the Redis Cluster of REDIS_CLUSTER_NODES: one node that answers is enough, no Docker for Redis', async () => {
    const { database, pgPort, redisPort } = await unreachable();
    const run = await start({
      PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/${database}`,
      // The first node is down, the second (a URL, as REDIS_CLUSTER_NODES may give them) answers.
      REDIS_CLUSTER_NODES: `127.0.0.1:${redisPort},redis://127.0.0.1:6379`,
    });
    await run.until(/\[conclave\] postgres is up/);
    expect(run.output()).toContain(
      `[conclave] cannot reach PostgreSQL (127.0.0.1:${pgPort}): starting it with Docker:  docker compose up -d postgres`,
    );
    expect((await dockerCalls()).map((c) => c.args)).toEqual([
      ['compose', 'version'],
      ['compose', '-f', COMPOSE_FILE, 'up', '-d', 'postgres'],
    ]);
  });

  it('does not start a single Redis for a Redis Cluster that does not answer: says what to do and exits 1', async () => {
    const { database, redisPort } = await unreachable();
    const other = await freePort();
    // The single Redis of this machine answers on 6379: npm start must not take it for the cluster.
    const run = await start({
      PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
      REDIS_CLUSTER_NODES: `127.0.0.1:${redisPort},redis://default:s3cret@127.0.0.1:${other}`,
    });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(
      `[conclave] cannot reach Redis Cluster (127.0.0.1:${redisPort}, 127.0.0.1:${other}).`,
    );
    expect(run.output()).not.toContain('s3cret');
    expect(run.output()).toContain(
      '[conclave] No node of the Redis Cluster in REDIS_CLUSTER_NODES answers. npm start starts only a single Redis',
    );
    expect(await dockerCalls()).toEqual([]);
  });

  it('starts nothing for services that are not on this machine', async () => {
    const { redisPort } = await unreachable();
    const run = await start({
      PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      DATABASE_URL: 'postgres://postgres@db.invalid:5432/conclave',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(
      '[conclave] PostgreSQL at db.invalid:5432 (DATABASE_URL) is not on this machine: start it there, or fix DATABASE_URL.',
    );
    expect(await dockerCalls()).toEqual([]);
  });
});

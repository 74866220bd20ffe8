// `npm start`: make sure PostgreSQL and Redis answer (starting the compose file's `postgres` and
// `redis` with Docker when they do not and Docker is there), migrate the database, then run gateway
// and worker together on the simulated provider (unless a real one is configured). Single-user
// mode unless AUTH_MODE says otherwise.
//
// CONCLAVE_DOCKER: the docker command to use (a path, or e.g. `podman`; default: `docker compose`,
// else `docker-compose`); `off` never starts containers. CONCLAVE_START_WAIT_S: how long to wait
// for started services to accept connections (default 120).
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const COMPOSE_FILE = path.join(root, 'docker-compose.yml');
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/conclave';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

const say = (line) => console.log(`[conclave] ${line}`);
const complain = (line) => console.error(`[conclave] ${line}`);

/** The two services `npm start` needs, as the compose file names them. */
function services(env) {
  const databaseUrl = new URL(env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const redisUrl = new URL(env.REDIS_URL || DEFAULT_REDIS_URL);
  // host:port, or redis://user:password@host:port / rediss://… (as the apps read them).
  const clusterNodes = (env.REDIS_CLUSTER_NODES || '')
    .split(',')
    .map((node) => node.trim())
    .filter(Boolean)
    .map((node) => new URL(/^rediss?:\/\//i.test(node) ? node : `redis://${node}`));
  // A Redis Cluster replaces REDIS_URL (the apps ignore it then). The compose file has no cluster to
  // start, so a cluster that does not answer is only reported.
  const redis =
    clusterNodes.length > 0
      ? {
          name: 'Redis Cluster',
          service: null,
          variable: 'REDIS_CLUSTER_NODES',
          url: clusterNodes[0],
          port: Number(clusterNodes[0].port || 6379),
          // Shown without logins.
          nodes: clusterNodes.map((node) => `${node.hostname}:${node.port || 6379}`),
          accepting: async () => {
            for (const node of clusterNodes) if (await redisAccepting(node.toString())) return true;
            return false;
          },
        }
      : {
          name: 'Redis',
          service: 'redis',
          variable: 'REDIS_URL',
          url: redisUrl,
          port: Number(redisUrl.port || 6379),
          portVariable: 'CONCLAVE_REDIS_PORT',
          accepting: () => redisAccepting(redisUrl.toString()),
        };
  return [
    {
      name: 'PostgreSQL',
      service: 'postgres',
      variable: 'DATABASE_URL',
      url: databaseUrl,
      port: Number(databaseUrl.port || 5432),
      // The compose file publishes its port on 127.0.0.1 at this one (default 5432).
      portVariable: 'CONCLAVE_POSTGRES_PORT',
      accepting: () => postgresAccepting(databaseUrl.toString()),
    },
    redis,
  ];
}

const where = (s) => (s.nodes ? s.nodes.join(', ') : `${s.url.hostname}:${s.port}`);

/**
 * True once PostgreSQL answers a login: also when the database does not exist yet (the migration
 * creates it) or the login is refused (the migration then says why). Not while it starts up, nor
 * when only a port is open (Docker publishes ports before the server inside listens).
 */
async function postgresAccepting(url) {
  const { Client } = require('pg');
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    return ['3D000', '28000', '28P01'].includes(error && error.code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** True once Redis answers PING (not while it loads its data set). */
async function redisAccepting(url) {
  const Redis = require('ioredis');
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 3000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch (error) {
    // Up, but wanting a password REDIS_URL does not give: the gateway then says so.
    return /NOAUTH|WRONGPASS|invalid password/i.test(String(error && error.message));
  } finally {
    redis.disconnect();
  }
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1)$/i;

const dockerDisabled = (env) => /^(off|none|false|0)$/i.test((env.CONCLAVE_DOCKER || '').trim());

/** `docker compose` (v2), else `docker-compose` (v1), or CONCLAVE_DOCKER; null when none answers. */
function findCompose(env) {
  const configured = (env.CONCLAVE_DOCKER || '').trim();
  if (dockerDisabled(env)) return null;
  const candidates = configured
    ? [{ command: configured, args: ['compose'] }]
    : [
        { command: 'docker', args: ['compose'] },
        { command: 'docker-compose', args: [] },
      ];
  for (const candidate of candidates) {
    const probe = spawnSync(candidate.command, [...candidate.args, 'version'], {
      env,
      stdio: 'ignore',
      timeout: 20_000,
    });
    if (probe.status === 0) return { ...candidate, shown: [candidate.command, ...candidate.args].join(' ') };
  }
  return null;
}

/** What to install when neither the services nor Docker are there, for this operating system. */
function installAdvice(platform, missing) {
  const names = missing.map((s) => s.name).join(' and ');
  const docker = [
    `Either install Docker (https://docs.docker.com/get-docker/) and run npm start again: it then starts ${names}`,
    'from docker-compose.yml itself. Or install them on this machine:',
  ];
  if (platform === 'darwin') {
    return [
      ...docker,
      '  brew install postgresql@16 redis',
      '  brew services start postgresql@16 && brew services start redis',
      '  "$(brew --prefix postgresql@16)/bin/createuser" -s postgres   # Conclave connects as postgres',
      'then run npm start again.',
    ];
  }
  if (platform === 'linux') {
    return [
      ...docker,
      '  sudo apt-get install -y postgresql redis-server        # Debian, Ubuntu (they start at once)',
      `  sudo -u postgres psql -c "ALTER USER postgres PASSWORD 'postgres'"`,
      'then run npm start with that password in DATABASE_URL:',
      '  DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/conclave npm start',
      '(other distributions: their postgresql and redis packages, the same two settings).',
    ];
  }
  return [
    `Install Docker Desktop (https://docs.docker.com/desktop/) and run npm start again: it then starts ${names}`,
    'from docker-compose.yml itself. Or point DATABASE_URL and REDIS_URL at a PostgreSQL and a Redis you run.',
  ];
}

async function whichAreDown(list) {
  const down = [];
  for (const s of list) if (!(await s.accepting())) down.push(s);
  return down;
}

/**
 * Makes sure PostgreSQL and Redis accept connections: when they do not and they are meant to be
 * on this machine, starts the compose file's services for them with Docker and waits (bounded).
 * Returns the services it started; exits the process with a message when it cannot go on.
 */
async function ensureServices(env, platform = process.platform) {
  const missing = await whichAreDown(services(env));
  if (missing.length === 0) return [];
  const listed = missing.map((s) => `${s.name} (${where(s)})`).join(' and ');
  const cluster = missing.find((s) => s.service === null);
  if (cluster) {
    complain(`cannot reach ${listed}.`);
    complain(
      `No node of the Redis Cluster in ${cluster.variable} answers. npm start starts only a single Redis ` +
        `(docker-compose.yml has no cluster): start the cluster's nodes, fix ${cluster.variable}, or unset it ` +
        'to use REDIS_URL.',
    );
    return process.exit(1);
  }
  const remote = missing.filter((s) => !LOOPBACK.test(s.url.hostname));
  if (remote.length > 0) {
    complain(`cannot reach ${listed}.`);
    for (const s of remote) {
      complain(
        `${s.name} at ${where(s)} (${s.variable}) is not on this machine: start it there, or fix ${s.variable}.`,
      );
    }
    return process.exit(1);
  }
  const compose = findCompose(env);
  if (!compose) {
    complain(
      dockerDisabled(env)
        ? `cannot reach ${listed} (CONCLAVE_DOCKER=${env.CONCLAVE_DOCKER}: not starting them with Docker).`
        : `cannot reach ${listed}, and Docker (docker compose or docker-compose) is not installed to start them.`,
    );
    for (const line of installAdvice(platform, missing)) complain(line);
    return process.exit(1);
  }
  const names = missing.map((s) => s.service);
  const shown = `${compose.shown} up -d ${names.join(' ')}`;
  say(`cannot reach ${listed}: starting ${names.length > 1 ? 'them' : 'it'} with Docker:  ${shown}`);
  const ports = Object.fromEntries(missing.map((s) => [s.portVariable, String(s.port)]));
  const up = spawnSync(compose.command, [...compose.args, '-f', COMPOSE_FILE, 'up', '-d', ...names], {
    cwd: root,
    env: { ...env, ...ports },
    stdio: 'inherit',
  });
  if (up.status !== 0) {
    complain(
      `${shown} failed (${up.error ? up.error.message : `exit code ${up.status}`}). Is Docker running? ` +
        '(Docker Desktop started, or: sudo systemctl start docker)',
    );
    return process.exit(1);
  }
  const waitS = Number(env.CONCLAVE_START_WAIT_S) > 0 ? Number(env.CONCLAVE_START_WAIT_S) : 120;
  say(`waiting up to ${waitS} s for ${names.join(' and ')} to accept connections…`);
  const deadline = Date.now() + waitS * 1000;
  let down = missing;
  for (;;) {
    down = await whichAreDown(down);
    if (down.length === 0) break;
    if (Date.now() >= deadline) {
      complain(
        `${down.map((s) => `${s.name} (${where(s)})`).join(' and ')} did not accept connections within ${waitS} s ` +
          `after ${shown}. See: ${compose.shown} logs ${down.map((s) => s.service).join(' ')}`,
      );
      return process.exit(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  say(
    `${names.join(' and ')} ${names.length > 1 ? 'are' : 'is'} up (they keep running after npm start stops; ` +
      `stop them with: ${compose.shown} stop ${names.join(' ')})`,
  );
  return names;
}

async function main() {
  const env = {
    AUTH_MODE: 'none',
    SCARF_ANALYTICS: 'false',
    ...process.env,
  };
  const port = env.PORT || '3000';
  const tsNode = 'node -r ts-node/register/transpile-only -r tsconfig-paths/register';
  await ensureServices(env);
  execFileSync(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'apps/ops/src/migrate.ts'],
    {
      cwd: root,
      env,
      stdio: 'inherit',
    },
  );
  // The browser client: built once here so the gateway can serve it at /.
  execFileSync(
    process.execPath,
    [
      path.join(root, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '--config',
      'apps/web/vite.config.mts',
      '--logLevel',
      'warn',
    ],
    {
      cwd: root,
      env,
      stdio: 'inherit',
    },
  );
  const provider = env.OPENROUTER_API_KEY
    ? 'OpenRouter'
    : env.OPENAI_BASE_URL
      ? // Without the user and password a base URL may carry (a proxy's Basic authentication).
        env.OPENAI_BASE_URL.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, '$1')
      : 'the simulated provider';
  say(`starting gateway and worker on ${provider}`);
  say(`open:       http://localhost:${port}/   (the web client)`);
  say(`API docs:   http://localhost:${port}/api/docs`);
  say('try it:     npm run demo   (a deliberation streamed live over Socket.IO)');
  const { concurrently } = require('concurrently');
  const { result } = concurrently(
    [
      { name: 'gateway', command: `${tsNode} apps/gateway/src/main.ts`, prefixColor: 'cyan', env },
      { name: 'worker', command: `${tsNode} apps/worker/src/main.ts`, prefixColor: 'magenta', env },
    ],
    { cwd: root, env, killOthersOn: ['failure'], prefix: 'name' },
  );
  await result.catch(() => process.exit(1));
}

module.exports = { installAdvice, findCompose, services };

if (require.main === module) {
  main().catch((error) => {
    complain(error.message);
    process.exit(1);
  });
}

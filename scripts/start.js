// `npm start`: migrate the database, then run gateway and worker together on the simulated
// provider (unless a real one is configured). Single-user mode unless AUTH_MODE says otherwise.
const net = require('node:net');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { concurrently } = require('concurrently');

const root = path.resolve(__dirname, '..');
const env = {
  AUTH_MODE: 'none',
  SCARF_ANALYTICS: 'false',
  ...process.env,
};
const port = env.PORT || '3000';
const tsNode = 'node -r ts-node/register/transpile-only -r tsconfig-paths/register';

function reachable(url, fallbackPort) {
  const { hostname, port: p } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(p || fallbackPort) });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function main() {
  const databaseUrl = env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/conclave';
  const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
  const missing = [];
  if (!(await reachable(databaseUrl, 5432))) missing.push(`PostgreSQL (${new URL(databaseUrl).host})`);
  if (!(await reachable(redisUrl, 6379))) missing.push(`Redis (${new URL(redisUrl).host})`);
  if (missing.length > 0) {
    console.error(`[conclave] cannot reach ${missing.join(' and ')}.`);
    console.error(
      '[conclave] start them with:  docker compose up -d postgres redis   (then run npm start again)',
    );
    process.exit(1);
  }
  execFileSync(
    process.execPath,
    [
      '-r',
      'ts-node/register/transpile-only',
      '-r',
      'tsconfig-paths/register',
      'libs/persistence/src/cli/migrate.ts',
    ],
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
  console.log(`[conclave] starting gateway and worker on ${provider}`);
  console.log(`[conclave] open:       http://localhost:${port}/   (the web client)`);
  console.log(`[conclave] API docs:   http://localhost:${port}/api/docs`);
  console.log('[conclave] try it:     npm run demo   (a deliberation streamed live over Socket.IO)');
  const { result } = concurrently(
    [
      { name: 'gateway', command: `${tsNode} apps/gateway/src/main.ts`, prefixColor: 'cyan', env },
      { name: 'worker', command: `${tsNode} apps/worker/src/main.ts`, prefixColor: 'magenta', env },
    ],
    { cwd: root, env, killOthersOn: ['failure'], prefix: 'name' },
  );
  await result.catch(() => process.exit(1));
}

main().catch((error) => {
  console.error(`[conclave] ${error.message}`);
  process.exit(1);
});

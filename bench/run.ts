/**
 * Benchmarks of the real stack: gateway and worker processes, PostgreSQL and Redis, with the
 * simulated provider at a fixed per-call latency. Writes BENCHMARKS.md and bench/results.json.
 *
 *   npm run bench                         # full size, ~6 min on 2 cores (the issue allows 15)
 *   npm run bench -- --quick              # scaled down, ~2 min, writes to a temporary directory
 *   npm run bench -- --only overhead      # one scenario (or a comma-separated list)
 *   npm run bench -- --only pgbouncer     # the council direct vs through PgBouncer (needs `pgbouncer`)
 *   npm run bench -- --only cpu,http-provider  # CPU per deliberation; the models over HTTP
 *   npm run bench -- --only quorum --out <dir>  # council under heavy-tailed latencies, with and without a quorum
 *   npm run bench -- --only amplification  # one user floods (MCP batches, reports): another user's latency
 *   npm run bench -- faults --out <dir>   # faults under load (opt-in: never in the default or --quick run)
 *   npm run bench -- --out <dir>          # where BENCHMARKS.md and results.json go
 *   npm run bench -- --servers shared     # DATABASE_URL / REDIS_URL instead of private servers
 *   npm run bench -- --no-profile         # skip the worker CPU profile (full mode takes one)
 *   npm run bench -- --quick --profile    # take it in quick mode too
 *   BENCH_CONCURRENCY_PROFILE=1 npm run bench -- --only concurrency  # a worker profile through the burst (=gateway: the gateway)
 *   BENCH_WORKER_NODE_OPTIONS='--max-semi-space-size=32' npm run bench -- --only cpu,concurrency
 *                                         # NODE_OPTIONS for the worker processes of cpu and concurrency
 *   npm run bench -- --runtime ts-node    # run gateway and workers under ts-node, as the tests do
 *                                         # (default: compiled JavaScript, as in production)
 *
 * Exit code 0 when the harness ran (missed targets included), 1 when it broke.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createDataSource } from '@conclave/persistence';
import { compile, removeBuild, type Runtime } from './lib/build';
import { formatJson, renderMarkdown, runInfo } from './lib/report';
import { ProcSampler } from './lib/proc';
import { BenchPostgres, BenchRedis, postgresBinDir, redisServerBinary } from './lib/servers';
import { stopActiveStacks, type BenchContext, type Servers } from './lib/stack';
import { HarnessError, type Scenario, type ScenarioResult } from './lib/types';
import { accept } from './scenarios/accept';
import { amplification } from './scenarios/amplification';
import { concurrency } from './scenarios/concurrency';
import { cpu } from './scenarios/cpu';
import { httpProvider } from './scenarios/http-provider';
import { fairness } from './scenarios/fairness';
import { fanOut } from './scenarios/fan-out';
import { faults } from './scenarios/faults';
import { lifecycle } from './scenarios/lifecycle';
import { liveDeltas } from './scenarios/live-deltas';
import { openaiCompatible } from './scenarios/openai-compatible';
import { overhead } from './scenarios/overhead';
import { pgbouncer } from './scenarios/pgbouncer';
import { quorum } from './scenarios/quorum';
import { report } from './scenarios/report';
import { scaleOut } from './scenarios/scale-out';
import { throughput } from './scenarios/throughput';

const ROOT = path.resolve(__dirname, '..');
const SCENARIOS: Scenario[] = [
  overhead,
  cpu,
  httpProvider,
  throughput,
  concurrency,
  scaleOut,
  fairness,
  fanOut,
  liveDeltas,
  accept,
  report,
  amplification,
  lifecycle,
  openaiCompatible,
  pgbouncer,
  quorum,
  faults,
];

interface Options {
  quick: boolean;
  only: string[] | null;
  out: string | null;
  servers: 'private' | 'shared' | 'auto';
  /** null: take the worker CPU profile in full mode only */
  profile: boolean | null;
  /** null: compiled, falling back to ts-node when compiling fails */
  runtime: 'compiled' | 'ts-node' | null;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    quick: false,
    only: null,
    out: null,
    servers: 'auto',
    profile: null,
    runtime: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === '--quick') options.quick = true;
    else if (arg === '--only') options.only = value().split(',').filter(Boolean);
    else if (arg === '--out') options.out = path.resolve(value());
    else if (arg === '--no-profile') options.profile = false;
    else if (arg === '--profile') options.profile = true;
    else if (arg === '--runtime') {
      const kind = value();
      if (kind !== 'compiled' && kind !== 'ts-node') throw new Error('--runtime is compiled or ts-node');
      options.runtime = kind;
    } else if (arg === '--servers') {
      const kind = value();
      if (kind !== 'private' && kind !== 'shared' && kind !== 'auto')
        throw new Error('--servers is private, shared or auto');
      options.servers = kind;
    } else if (!arg.startsWith('-'))
      options.only = [...(options.only ?? []), ...arg.split(',').filter(Boolean)];
    else throw new Error(`unknown argument ${arg}`);
  }
  const names = SCENARIOS.map((s) => s.name);
  for (const name of options.only ?? []) {
    if (!names.includes(name)) throw new Error(`unknown scenario ${name}; scenarios: ${names.join(', ')}`);
  }
  return options;
}

/** Everything to undo on the way out, also after Ctrl-C. */
const cleanups: (() => Promise<void> | void)[] = [];
async function cleanup(): Promise<void> {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()?.();
    } catch {
      // best effort
    }
  }
}

async function startServers(kind: Options['servers'], log: (m: string) => void): Promise<Servers> {
  const canStart = postgresBinDir() !== null && redisServerBinary() !== null;
  if (kind === 'private' || (kind === 'auto' && canStart)) {
    log('starting a private PostgreSQL cluster and Redis for the benchmark…');
    const postgres = await BenchPostgres.create(2300);
    cleanups.push(() => postgres.destroy());
    const redis = await BenchRedis.create();
    cleanups.push(() => redis.destroy());
    return {
      kind: 'private',
      databaseUrl: (name) => postgres.url(name),
      redisUrl: redis.url(),
      postgresPid: postgres.pid(),
      redisPid: redis.pid ?? null,
    };
  }
  const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/conclave');
  return {
    kind: 'shared',
    databaseUrl: (name) => {
      const url = new URL(base);
      url.pathname = `/${name}`;
      return url.toString();
    },
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    postgresPid: null,
    redisPid: null,
  };
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const log = (message: string) =>
    console.log(`[bench ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const outDir = options.out ?? (options.quick ? mkdtempSync(path.join(tmpdir(), 'conclave-bench-')) : null);

  const servers = await startServers(options.servers, log);
  cleanups.push(() => stopActiveStacks());
  let runtime: Runtime = { kind: 'ts-node' };
  if (options.runtime !== 'ts-node') {
    log('compiling the apps as npm run build does (into a temporary directory)…');
    try {
      runtime = await compile();
      const build = runtime;
      cleanups.push(() => removeBuild(build));
    } catch (error) {
      if (options.runtime === 'compiled') throw error;
      log(`could not compile (${String(error).slice(0, 300)}); running the apps under ts-node instead`);
    }
  }
  const sampler = new ProcSampler(200);
  if (servers.postgresPid)
    sampler.track({ label: 'postgres (all backends)', pid: servers.postgresPid, tree: true });
  if (servers.redisPid) sampler.track({ label: 'redis', pid: servers.redisPid });
  sampler.start();
  cleanups.push(() => sampler.stop());
  const ctx: BenchContext = {
    servers,
    sampler,
    quick: options.quick,
    log,
    profile: options.profile ?? !options.quick,
    runtime,
  };
  const info = await runInfo(
    servers.databaseUrl('postgres'),
    servers.redisUrl,
    servers.kind === 'private'
      ? 'private PostgreSQL cluster and Redis started by the benchmark (default durability: fsync and synchronous_commit on)'
      : 'shared PostgreSQL and Redis (DATABASE_URL / REDIS_URL)',
    options.quick,
    `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  );
  if (servers.kind === 'shared') {
    // A worker's pool grows to WORKER_CONCURRENCY connections (the concurrency scenario sets 2 × its
    // deliberations): a shared server with the default 100 slots runs out, and the scenario breaks.
    const needed = options.quick ? 300 : 2300;
    const probe = createDataSource(servers.databaseUrl('postgres'), 1);
    try {
      await probe.initialize();
      const [row]: { max_connections: string }[] = await probe.query('SHOW max_connections');
      if (Number(row.max_connections) < needed)
        log(
          `warning: the shared PostgreSQL allows ${row.max_connections} connections; the scenarios may need ${needed} (use --servers private)`,
        );
    } catch (error) {
      log(`warning: could not read max_connections: ${String(error)}`);
    } finally {
      await probe.destroy().catch(() => undefined);
    }
  }
  info.runtime =
    runtime.kind === 'compiled'
      ? 'compiled JavaScript (tsc -p tsconfig.build.json + tsc-alias, as `npm run build`), run with plain node like `npm run prod:gateway` / `prod:worker`'
      : 'TypeScript through ts-node (transpile-only), as the tests run them: RSS includes ~80–100 MB of the TypeScript compiler';
  log(
    `${info.machine.cores} × ${info.machine.cpu}, ${info.machine.memoryGb} GB, Node ${info.machine.node}, ${info.machine.postgres}, ${info.machine.redis}; load average ${info.loadAverageAtStart.join(' ')}`,
  );

  // Opt-in scenarios (faults: it stops and starts servers) run only when named.
  const selected = SCENARIOS.filter((s) => (options.only ? options.only.includes(s.name) : !s.optIn));
  const results: ScenarioResult[] = [];
  let broken = false;
  for (const scenario of selected) {
    log(`${scenario.name}: ${scenario.title}`);
    const t0 = Date.now();
    const loadAverage = loadavg().map((l) => Math.round(l * 100) / 100);
    try {
      const outcome = await scenario.run(ctx);
      const met = outcome.checks.length > 0 ? outcome.checks.every((c) => c.met) : null;
      if (outcome.error) {
        broken = true;
        log(`${scenario.name} BROKE: ${outcome.error}`);
      }
      results.push({ ...outcome, met, durationS: Math.round((Date.now() - t0) / 1000), loadAverage });
    } catch (error) {
      broken = true;
      const message = error instanceof Error ? error.message : String(error);
      log(`${scenario.name} BROKE: ${message}`);
      if (!(error instanceof HarnessError) && error instanceof Error) console.error(error.stack);
      results.push({
        name: scenario.name,
        title: scenario.title,
        target: scenario.target,
        parameters: {},
        figures: {},
        checks: [],
        met: null,
        tables: [],
        method: [],
        limits: [],
        evidence: {},
        durationS: Math.round((Date.now() - t0) / 1000),
        loadAverage,
        error: message,
      });
    }
    const last = results[results.length - 1];
    for (const check of last.checks) {
      log(`  ${check.what}: ${check.value} (target ${check.target}) → ${check.met ? 'met' : 'NOT met'}`);
    }
  }
  info.durationS = Math.round((Date.now() - started) / 1000);

  const markdown = renderMarkdown(info, results);
  const json = results.map((r) => ({
    name: r.name,
    title: r.title,
    target: r.target,
    met: r.met,
    checks: r.checks,
    parameters: r.parameters,
    figures: r.figures,
    evidence: r.evidence,
    limits: r.limits,
    notes: r.notes ?? [],
    method: r.method,
    durationS: r.durationS,
    loadAverage: r.loadAverage,
    ...(r.error ? { error: r.error } : {}),
    run: {
      date: info.date,
      commit: info.commit,
      dirty: info.dirty,
      machine: info.machine,
      quick: info.quick,
    },
  }));
  const markdownPath = outDir ? path.join(outDir, 'BENCHMARKS.md') : path.join(ROOT, 'BENCHMARKS.md');
  const jsonPath = outDir ? path.join(outDir, 'results.json') : path.join(ROOT, 'bench', 'results.json');
  mkdirSync(path.dirname(markdownPath), { recursive: true });
  writeFileSync(markdownPath, markdown);
  writeFileSync(jsonPath, await formatJson(json, jsonPath));
  console.log('');
  console.log(markdown.split('\n## ').slice(0, 3).join('\n## '));
  log(`wrote ${markdownPath} and ${jsonPath} in ${info.durationS} s${broken ? ' — THE HARNESS BROKE' : ''}`);
  return broken ? 1 : 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    await cleanup();
    process.exit(1);
  });

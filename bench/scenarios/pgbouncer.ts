import { cpus } from 'node:os';
import type { Pool } from 'pg';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { PgBouncer, pgbouncerBinary } from '../../test/support/pgbouncer';
import { startDeliberation, type Follower } from '../lib/client';
import { ProcSampler, type CpuReport, type CpuSnapshot } from '../lib/proc';
import { BenchStack, type Spawned } from '../lib/stack';
import { mapLimit, median, round, sleep, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { requestFor } from './overhead';

const LATENCY_MS = 200;
/** A council with a title: three stage jobs, three model-call layers (the title runs beside stage 1). */
const COUNCIL_STAGES = 3;
const PER_STAGE_P50_MS = 15;
/** Server connections of the transaction pool: fewer than the gateway's and the worker's client connections. */
const TRANSACTION_POOL_SIZE = 10;
/** A session pool must hold every client connection (gateway pool 10 + WORKER_DB_POOL 20). */
const SESSION_POOL_SIZE = 40;
const WORKER_DB_POOL = 20;

type Key = 'direct' | 'unnamed' | 'session' | 'transaction';

interface Setup {
  key: Key;
  label: string;
  bouncer: 'session' | 'transaction' | null;
  env: Record<string, string>;
}

const SETUPS: Setup[] = [
  { key: 'direct', label: 'direct to PostgreSQL (named prepared statements)', bouncer: null, env: {} },
  {
    // What the setting costs without PgBouncer: the statements unnamed, nothing else changed.
    key: 'unnamed',
    label: 'direct to PostgreSQL, DATABASE_POOL_MODE=transaction (unnamed statements; for comparison)',
    bouncer: null,
    env: { DATABASE_POOL_MODE: 'transaction' },
  },
  {
    key: 'session',
    label: 'PgBouncer pool_mode = session, DATABASE_POOL_MODE=session (named prepared statements)',
    bouncer: 'session',
    env: { DATABASE_POOL_MODE: 'session' },
  },
  {
    key: 'transaction',
    label: 'PgBouncer pool_mode = transaction, DATABASE_POOL_MODE=transaction (unnamed statements)',
    bouncer: 'transaction',
    env: { DATABASE_POOL_MODE: 'transaction' },
  },
];

/** The columns of the CPU table: the stack's processes, by role. */
const ROLES = ['postgres', 'pgbouncer', 'worker', 'gateway', 'redis'] as const;
type Role = (typeof ROLES)[number];

/** One setup's running stack. */
interface Running {
  setup: Setup;
  stack: BenchStack;
  bouncer: PgBouncer | null;
  database: string;
  followers: Follower[];
  /** Sampler label of each of its processes (PostgreSQL and Redis are shared by all of them). */
  labels: Record<Role, string>;
  sequential: { ok: boolean; elapsedMs: number }[];
  trials: { seconds: number; failed: number; msPerDeliberation: Record<Role, number>; totalMs: number }[];
  connections: { client: number | null; server: number } | null;
}

/** Gives a spawned process a label of its own (each stack calls its first gateway `gateway 1`). */
function relabel(ctx: Parameters<Scenario['run']>[0], spawned: Spawned, label: string): void {
  ctx.sampler.untrack(spawned.label);
  spawned.label = label;
  ctx.sampler.track({ label, pid: spawned.child.pid ?? 0 });
}

function cpuPerDeliberation(run: Running, from: CpuSnapshot, to: CpuSnapshot, count: number) {
  const msPerDeliberation = {} as Record<Role, number>;
  let totalMs = 0;
  for (const role of ROLES) {
    const label = run.labels[role];
    if (to.processes[label] === undefined) continue;
    const ms = ((to.processes[label] - (from.processes[label] ?? 0)) * 1000) / count;
    msPerDeliberation[role] = round(ms, 2);
    totalMs += ms;
  }
  return { msPerDeliberation, totalMs: round(totalMs, 1) };
}

/**
 * The overhead scenario's council four ways: straight to PostgreSQL (with named statements and, for
 * comparison, without), through PgBouncer in session pooling and through PgBouncer in transaction
 * pooling (Debian's pgbouncer, started here on a free port in front of the benchmark's PostgreSQL). The four stacks run side by side and take turns,
 * so that load from other tenants of the machine falls on all of them alike: latency per stage one
 * deliberation at a time, then CPU per deliberation over bursts of councils in flight together.
 */
export const pgbouncer: Scenario = {
  name: 'pgbouncer',
  title: 'Through PgBouncer',
  target:
    `every council completes through PgBouncer in transaction pooling (DATABASE_POOL_MODE=transaction); ` +
    `overhead per stage p50 ≤ ${PER_STAGE_P50_MS} ms there too; the cost of each setup reported`,
  async run(ctx) {
    if (!pgbouncerBinary()) {
      return {
        name: 'pgbouncer',
        title: this.title,
        target: this.target,
        parameters: {},
        figures: {},
        checks: [],
        tables: [],
        method: [],
        limits: ['Not run: pgbouncer is not installed (apt-get install -y pgbouncer; .ci/run installs it).'],
        evidence: {},
      };
    }
    const sequentialRuns = ctx.quick ? 3 : 30;
    const warmup = ctx.quick ? 1 : 5;
    const burst = ctx.quick ? 20 : 150;
    const trials = ctx.quick ? 1 : 3;
    const inFlight = ctx.quick ? 10 : 50;
    let version = '';
    const running: Running[] = [];
    try {
      // The quick form (CI) leaves out the comparison without PgBouncer: three stacks to start, not four.
      for (const setup of SETUPS.filter((s) => !ctx.quick || s.key !== 'unnamed')) {
        const stack = await new BenchStack(ctx, {
          SIM_LATENCY_MS: String(LATENCY_MS),
          WORKER_CONCURRENCY: String(4 * inFlight),
          WORKER_DB_POOL: String(WORKER_DB_POOL),
        }).init();
        const direct = new URL(stack.test.config.databaseUrl);
        const database = decodeURIComponent(direct.pathname.slice(1));
        const run: Running = {
          setup,
          stack,
          bouncer: null,
          database,
          followers: [],
          labels: {
            postgres: 'postgres (all backends)',
            redis: 'redis',
            pgbouncer: `pgbouncer (${setup.key})`,
            worker: `worker (${setup.key})`,
            gateway: `gateway (${setup.key})`,
          },
          sequential: [],
          trials: [],
          connections: null,
        };
        running.push(run);
        let env: Record<string, string> = {};
        if (setup.bouncer) {
          run.bouncer = await PgBouncer.start({
            upstream: { host: direct.hostname, port: Number(direct.port || 5432) },
            poolMode: setup.bouncer,
            defaultPoolSize: setup.bouncer === 'session' ? SESSION_POOL_SIZE : TRANSACTION_POOL_SIZE,
          });
          ctx.sampler.track({ label: run.labels.pgbouncer, pid: run.bouncer.pid });
          const [row] = await run.bouncer.admin<{ version: string }>('SHOW VERSION');
          version = row?.version ?? version;
          env = { DATABASE_URL: run.bouncer.url(database), ...setup.env };
        }
        relabel(ctx, await stack.spawnGateway(env), run.labels.gateway);
        relabel(ctx, await stack.spawnWorker(env), run.labels.worker);
        for (let i = 0; i < 5; i++) run.followers.push(await stack.follower());
      }

      let counter = 0;
      const council = async (run: Running, follower: Follower) => {
        const accepted = await startDeliberation(run.stack.baseUrl, requestFor('council', counter++));
        const followed = await follower.follow(accepted.messageId, 60_000);
        return { ok: followed.terminal === 'complete', elapsedMs: followed.terminalAt - accepted.acceptedAt };
      };

      /** The setups in turn, each round starting with the next one (no setup always goes first). */
      const inTurn = (turn: number) => running.map((_, i) => running[(turn + i) % running.length]);
      for (let i = 0; i < warmup; i++) for (const run of inTurn(i)) await council(run, run.followers[0]);
      // Latency: one council at a time, the setups taking turns.
      const cpuFrom = ctx.sampler.cpu();
      for (let i = 0; i < sequentialRuns; i++) {
        for (const run of inTurn(i)) run.sequential.push(await council(run, run.followers[0]));
      }
      ctx.log(`  pgbouncer: ${sequentialRuns} sequential councils per setup done`);
      // CPU: bursts, one setup at a time, the setups taking turns.
      for (let t = 0; t < trials; t++) {
        for (const run of inTurn(t)) {
          await sleep(300);
          const from = ctx.sampler.cpu();
          const t0 = Date.now();
          const outcomes = await mapLimit(
            Array.from({ length: burst }, (_, i) => i),
            inFlight,
            (i) => council(run, run.followers[i % run.followers.length]),
          );
          const seconds = (Date.now() - t0) / 1000;
          // Let the last deliberations' trailing work (job completion, publishes) land in the window.
          await sleep(300);
          const cpu = cpuPerDeliberation(run, from, ctx.sampler.cpu(), burst);
          run.trials.push({
            seconds: round(seconds, 2),
            failed: outcomes.filter((o) => !o.ok).length,
            ...cpu,
          });
          if (t === trials - 1) {
            // Connections right after the burst (pg's pools keep idle ones for 10 s).
            if (run.bouncer) {
              const clients = await run.bouncer.admin<{ database: string }>('SHOW CLIENTS');
              const servers = await run.bouncer.admin<{ database: string }>('SHOW SERVERS');
              run.connections = {
                client: clients.filter((c) => c.database === run.database).length,
                server: servers.filter((s) => s.database === run.database).length,
              };
            } else {
              const own = ((run.stack.db.driver as PostgresDriver).master as Pool).totalCount;
              const [row]: { n: number }[] = await run.stack.db.query(
                'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()',
              );
              run.connections = { client: null, server: row.n - own };
            }
          }
          ctx.log(`  pgbouncer: ${run.setup.key}: burst ${t + 1}: ${cpu.totalMs} ms CPU per council`);
        }
      }
      const cpuReport: CpuReport = ProcSampler.report(cpuFrom, ctx.sampler.cpu(), cpus().length);

      const failed = running.reduce(
        (n, r) => n + r.sequential.filter((s) => !s.ok).length + r.trials.reduce((m, t) => m + t.failed, 0),
        0,
      );
      if (failed > 0) throw new HarnessError(`${failed} councils did not complete`);
      const figures = running.map((r) => {
        const ok = r.sequential.filter((s) => s.ok);
        const msPerDeliberation = Object.fromEntries(
          ROLES.filter((role) => r.trials.some((t) => t.msPerDeliberation[role] !== undefined)).map(
            (role) => [role, round(median(r.trials.map((t) => t.msPerDeliberation[role] ?? 0)), 1)],
          ),
        ) as Partial<Record<Role, number>>;
        return {
          setup: r.setup.key,
          label: r.setup.label,
          sequential: {
            runs: r.sequential.length,
            perStageMs: summary(ok.map((s) => (s.elapsedMs - COUNCIL_STAGES * LATENCY_MS) / COUNCIL_STAGES)),
            elapsedMs: summary(ok.map((s) => s.elapsedMs)),
          },
          cpu: {
            msPerDeliberation,
            totalMs: round(median(r.trials.map((t) => t.totalMs)), 1),
            trials: r.trials,
          },
          councilsPerS: round(median(r.trials.map((t) => burst / t.seconds)), 1),
          connections: r.connections,
        };
      });
      const of = (key: Key) => figures.find((f) => f.setup === key);
      const transaction = of('transaction');
      const direct = of('direct');
      if (!transaction || !direct) throw new HarnessError('a setup did not run');
      const completed = transaction.sequential.runs + burst * trials;
      const checks: Check[] = [
        {
          what: 'PgBouncer transaction pooling: councils completed',
          target: 'all',
          value: `${completed} of ${completed}`,
          met: true,
        },
        {
          what: 'PgBouncer transaction pooling: council overhead per stage p50',
          target: `≤ ${PER_STAGE_P50_MS} ms`,
          value: `${transaction.sequential.perStageMs.p50} ms (direct, in turns with it: ${direct.sequential.perStageMs.p50} ms)`,
          met: transaction.sequential.perStageMs.p50 <= PER_STAGE_P50_MS,
        },
      ];
      const rows = figures.map((f) => [
        f.label,
        `**${f.sequential.perStageMs.p50}** / ${f.sequential.perStageMs.p95}`,
        f.sequential.elapsedMs.p50,
        ...ROLES.map((role) => f.cpu.msPerDeliberation[role] ?? '–'),
        `**${f.cpu.totalMs}**`,
        f.councilsPerS,
        f.connections?.client === null || f.connections === null
          ? `${f.connections?.server ?? '?'}`
          : `${f.connections.client} → ${f.connections.server}`,
      ]);
      return {
        name: 'pgbouncer',
        title: this.title,
        target: this.target,
        parameters: {
          pgbouncer: version || 'unknown',
          latencyMs: LATENCY_MS,
          jitter: 0,
          sequentialRunsPerSetup: sequentialRuns,
          warmupRunsPerSetup: warmup,
          burst,
          trials,
          inFlight,
          transactionPoolSize: TRANSACTION_POOL_SIZE,
          sessionPoolSize: SESSION_POOL_SIZE,
          workerDbPool: WORKER_DB_POOL,
          gatewayDbPool: 10,
        },
        figures: { setups: figures },
        checks,
        tables: [
          {
            table: {
              columns: [
                'setup',
                'per stage p50 / p95 (ms)',
                '202 → complete p50 (ms)',
                ...ROLES.map((role) => `CPU ms per council: ${role}`),
                'CPU ms per council: total',
                `councils/s (${inFlight} in flight)`,
                'connections: client → server',
              ],
              rows,
            },
          },
        ],
        method: [
          `${running.length} stacks side by side on the benchmark's PostgreSQL and Redis, each with its own database, one gateway and one worker (WORKER_CONCURRENCY ${4 * inFlight}, WORKER_DB_POOL ${WORKER_DB_POOL}; the gateway's pool holds 10): ${running.length > 3 ? 'two straight to PostgreSQL (the second with DATABASE_POOL_MODE=transaction, to show what unnamed statements cost alone)' : 'one straight to PostgreSQL (the quick form leaves out the one with unnamed statements)'}, two through a PgBouncer of their own (${version || 'pgbouncer'}, Debian's, on a free loopback port; default_pool_size ${SESSION_POOL_SIZE} in session mode — it must hold every client connection — and ${TRANSACTION_POOL_SIZE} in transaction mode).`,
          `Latency: the overhead scenario's council (three members and a chairman, a new conversation with its title), ${sequentialRuns} runs per setup one at a time after ${warmup} warm-ups, the setups taking turns run by run; latency ${LATENCY_MS} ms without jitter; per stage = (202 → \`complete\` at a Socket.IO client − ${COUNCIL_STAGES} × ${LATENCY_MS} ms) ÷ ${COUNCIL_STAGES} stage jobs.`,
          `CPU: ${trials} burst${trials > 1 ? 's' : ''} of ${burst} such councils per setup with ${inFlight} in flight (the setups taking turns burst by burst), each council followed by one of five Socket.IO clients; /proc user + system time of PostgreSQL (all backends), the setup's PgBouncer, worker and gateway, and Redis over each burst ÷ ${burst}; the median of the bursts. PostgreSQL and Redis also serve the ${running.length - 1} idle stacks meanwhile (a few timers).`,
          'Connections: right after the last burst, PgBouncer’s SHOW CLIENTS / SHOW SERVERS for the database (direct: pg_stat_activity less the benchmark’s own).',
        ],
        limits: checks[1].met
          ? []
          : [
              `Direct, in turns with it, measured ${direct.sequential.perStageMs.p50} ms per stage at the median: ` +
                `what is above ${PER_STAGE_P50_MS} ms there is the machine (other tenants kept its cores busy, see the ` +
                `CPU table), not PgBouncer. Through PgBouncer in transaction pooling a stage took ` +
                `${round(transaction.sequential.perStageMs.p50 - direct.sequential.perStageMs.p50, 1)} ms more than ` +
                `direct at the median in this run (negative: less); on a machine this busy that difference moves ` +
                `by several milliseconds either way from run to run.`,
            ],
        notes: [
          'Transaction pooling sends the statements every stage runs unnamed, so PostgreSQL parses and plans them on every call instead of once per connection (planning the stage’s load takes about 0.1 ms: EXPLAIN ANALYZE), and PgBouncer adds a hop per statement and its own CPU; in exchange two or three dozen client connections share ten server connections. Session pooling keeps named statements but holds a server connection per client connection, so it saves no PostgreSQL connections (it only moves where they queue).',
        ],
        evidence: { cpu: { all: cpuReport } },
      };
    } finally {
      for (const run of running) {
        ctx.sampler.untrack(run.labels.pgbouncer);
        await run.stack.stop();
        await run.bouncer?.stop();
      }
    }
  },
};

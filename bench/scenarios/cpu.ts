import { writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { DbActivity } from '../lib/batch';
import { startDeliberation, type Follower } from '../lib/client';
import { ProcSampler, type CpuSnapshot } from '../lib/proc';
import {
  profileTables,
  profilerEnv,
  startProfile,
  stopProfile,
  summarizeProfile,
  type ProfileSummary,
} from '../lib/profile';
import { BenchStack } from '../lib/stack';
import { mapLimit, median, round, sleep } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { requestFor } from './overhead';

/** The issue's figure: CPU of PostgreSQL, worker and gateway together per four-model council with a title. */
export const COUNCIL_CPU_TARGET_MS = 20;
const LATENCY_MS = 100;
const COUNCIL = ['sim/athena', 'sim/hermes', 'sim/apollo', 'sim/artemis'];
const COUNCIL_MODE = 'council (4 models + chairman, title)';
const MODES = [COUNCIL_MODE, 'vote', 'jury', 'debate', 'delphi'] as const;
/** The processes of the stack, in report order (the bench client is left out of the sums). */
const PROCESSES = ['postgres (all backends)', 'worker 1', 'gateway 1', 'redis'];

/** A request per mode: the council is the issue's (four models, a chairman, a new conversation: a title). */
export function cpuRequest(mode: (typeof MODES)[number], run: number): Record<string, unknown> {
  if (mode === COUNCIL_MODE) {
    return {
      question: `CPU question ${run}: which of four options is best for a city's transport?`,
      councilModels: COUNCIL,
      chairmanModel: 'sim/chair',
    };
  }
  return requestFor(mode, run);
}

interface Trial {
  deliberations: number;
  seconds: number;
  /** CPU ms per deliberation per process (bench client excluded). */
  msPerDeliberation: Record<string, number>;
  totalMs: number;
}

function trialOf(from: CpuSnapshot, to: CpuSnapshot, count: number): Trial {
  const report = ProcSampler.report(from, to, cpus().length);
  // Finer than the report's 0.1 s rounding: /proc counts in 10 ms ticks.
  const msPerDeliberation: Record<string, number> = {};
  let totalMs = 0;
  for (const label of Object.keys(to.processes)) {
    const ms = ((to.processes[label] - (from.processes[label] ?? 0)) * 1000) / count;
    msPerDeliberation[label] = round(ms, 2);
    totalMs += ms;
  }
  return { deliberations: count, seconds: report.seconds, msPerDeliberation, totalMs: round(totalMs, 2) };
}

/** Medians of the trials, per process and in total. */
function medians(trials: Trial[]): { msPerDeliberation: Record<string, number>; totalMs: number } {
  const labels = [...new Set(trials.flatMap((t) => Object.keys(t.msPerDeliberation)))];
  return {
    msPerDeliberation: Object.fromEntries(
      labels.map((l) => [l, round(median(trials.map((t) => t.msPerDeliberation[l] ?? 0)), 1)]),
    ),
    totalMs: round(median(trials.map((t) => t.totalMs)), 1),
  };
}

/**
 * CPU per deliberation per mode and per process: batches of deliberations, each followed by a
 * Socket.IO client as a user's browser does, with the stack's processes' CPU counters read before
 * and after each batch (/proc: user + system time; PostgreSQL with all its backends). Several
 * batches per mode; the medians are reported.
 */
export const cpu: Scenario = {
  name: 'cpu',
  title: 'CPU per deliberation',
  target: `≤ ${COUNCIL_CPU_TARGET_MS} ms of CPU (PostgreSQL, worker, gateway and Redis together) per four-model council with a title`,
  async run(ctx) {
    // Env overrides for experiments; the defaults are what the reports use.
    const knob = (name: string, fallback: number) => Number(process.env[`BENCH_CPU_${name}`] ?? fallback);
    const perTrial = knob('PER_TRIAL', ctx.quick ? 30 : 150);
    const trials = knob('TRIALS', ctx.quick ? 2 : 5);
    // Long enough for V8 to have optimised the hot paths: before that its compiler threads add a
    // third to the first trials' CPU.
    const warmup = knob('WARMUP', ctx.quick ? 20 : 150);
    const inFlight = knob('IN_FLIGHT', ctx.quick ? 10 : 50);
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: String(4 * inFlight),
    }).init();
    const workerProfile = ctx.profile
      ? path.join(tmpdir(), `conclave-bench-cpu-worker-${Date.now()}.cpuprofile`)
      : null;
    const gatewayProfile = ctx.profile
      ? path.join(tmpdir(), `conclave-bench-cpu-gateway-${Date.now()}.cpuprofile`)
      : null;
    try {
      if (process.env.BENCH_CPU_TRACK_ALL) {
        // Experiments: statements inside PL/pgSQL functions too (pg_stat_statements.track = all).
        const [{ db }]: { db: string }[] = await stack.db.query('SELECT current_database() AS db');
        await stack.db.query(`ALTER DATABASE "${db}" SET pg_stat_statements.track = 'all'`);
        await stack.db.query(`ALTER DATABASE "${db}" SET track_functions = 'all'`);
      }
      const [gateway, worker] = await Promise.all([
        stack.spawnGateway({
          ...(gatewayProfile ? profilerEnv(gatewayProfile) : {}),
          ...(process.env.BENCH_GATEWAY_NODE_OPTIONS
            ? { NODE_OPTIONS: process.env.BENCH_GATEWAY_NODE_OPTIONS }
            : {}),
        }),
        stack.spawnWorker({
          ...(workerProfile ? profilerEnv(workerProfile) : {}),
          ...(process.env.BENCH_WORKER_NODE_OPTIONS
            ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS }
            : {}),
        }),
      ]);
      const followers: Follower[] = [];
      for (let i = 0; i < 5; i++) followers.push(await stack.follower());
      let run = 0;
      const batch = async (mode: (typeof MODES)[number], count: number) => {
        const failed: string[] = [];
        await mapLimit(
          Array.from({ length: count }, () => run++),
          inFlight,
          async (i) => {
            const accepted = await startDeliberation(stack.baseUrl, cpuRequest(mode, i)).catch(
              (e: unknown) => {
                const cause = e instanceof Error ? (e.cause as Error | undefined) : undefined;
                throw new HarnessError(
                  `${mode}: POST /api/deliberations: ${String(e)}${cause ? ` (${String(cause)})` : ''}`,
                );
              },
            );
            const followed = await followers[i % followers.length].follow(accepted.messageId, 60_000);
            if (followed.terminal !== 'complete') failed.push(accepted.messageId);
          },
        );
        if (failed.length > 0)
          throw new HarnessError(`${mode}: ${failed.length} deliberations did not complete`);
      };

      // Idle: what the stack burns with nothing to do (timers, BullMQ's stalled checks, pings).
      await batch(COUNCIL_MODE, warmup);
      await sleep(1000);
      const idleFrom = ctx.sampler.cpu();
      await sleep(ctx.quick ? 2000 : 5000);
      const idleTo = ctx.sampler.cpu();
      const idleSeconds = (idleTo.at - idleFrom.at) / 1000;
      const idleMsPerS: Record<string, number> = {};
      for (const label of PROCESSES) {
        const s = (idleTo.processes[label] ?? 0) - (idleFrom.processes[label] ?? 0);
        idleMsPerS[label] = round((s * 1000) / idleSeconds, 2);
      }

      const perMode: Record<
        string,
        { trials: Trial[]; median: ReturnType<typeof medians>; postgres: Record<string, unknown> }
      > = {};
      let profiles: { worker: ProfileSummary; gateway: ProfileSummary } | null = null;
      const activity = new DbActivity(stack.db);
      const only = process.env.BENCH_CPU_MODES?.split(',');
      for (const mode of MODES.filter((m) => !only || only.some((o) => m.startsWith(o)))) {
        if (mode !== COUNCIL_MODE) await batch(mode, warmup);
        await sleep(300);
        await activity.reset();
        const profiling = mode === COUNCIL_MODE && workerProfile && gatewayProfile;
        if (profiling) {
          startProfile(worker.child);
          startProfile(gateway.child);
        }
        const done: Trial[] = [];
        for (let t = 0; t < trials; t++) {
          const from = ctx.sampler.cpu();
          await batch(mode, perTrial);
          // Let the last deliberations' trailing work (job completion, publishes) land in the window.
          await sleep(300);
          done.push(trialOf(from, ctx.sampler.cpu(), perTrial));
        }
        if (profiling) {
          await Promise.all([
            stopProfile(worker.child, workerProfile),
            stopProfile(gateway.child, gatewayProfile),
          ]);
          profiles = { worker: summarizeProfile(workerProfile), gateway: summarizeProfile(gatewayProfile) };
          ctx.log(`  cpu: profiles written to ${workerProfile} and ${gatewayProfile}`);
        }
        const postgres = await activity.read(perTrial * trials);
        if (process.env.BENCH_CPU_OUTPUT_DIR) {
          const statements: unknown[] = await stack.db.query(
            `SELECT calls, round(total_exec_time::numeric, 1) AS ms, rows, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
             FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY total_exec_time DESC LIMIT 40`,
          );
          const functions: unknown[] = await stack.db.query(
            'SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions',
          );
          writeFileSync(
            path.join(process.env.BENCH_CPU_OUTPUT_DIR, `pg-${MODES.indexOf(mode)}.json`),
            JSON.stringify({ deliberations: perTrial * trials, statements, functions }, null, 1),
          );
        }
        perMode[mode] = { trials: done, median: medians(done), postgres };
        if (process.env.BENCH_CPU_OUTPUT_DIR) {
          // Experiments: what the processes printed (e.g. V8's --trace-opt lines) up to this mode's end.
          writeFileSync(
            path.join(process.env.BENCH_CPU_OUTPUT_DIR, `worker-${MODES.indexOf(mode)}.log`),
            stack.output(worker),
          );
          writeFileSync(
            path.join(process.env.BENCH_CPU_OUTPUT_DIR, `gateway-${MODES.indexOf(mode)}.log`),
            stack.output(gateway),
          );
        }
        ctx.log(
          `  cpu: ${mode}: ${perMode[mode].median.totalMs} ms per deliberation (${done.map((t) => t.totalMs).join(', ')})`,
        );
      }

      const council = perMode[COUNCIL_MODE].median;
      const checks: Check[] = [
        {
          what: 'four-model council with a title: CPU per deliberation (median of trials)',
          target: `≤ ${COUNCIL_CPU_TARGET_MS} ms`,
          value: `${council.totalMs} ms (${PROCESSES.map((p) => `${p.replace(' (all backends)', '')} ${council.msPerDeliberation[p] ?? '–'}`).join(', ')})`,
          met: council.totalMs <= COUNCIL_CPU_TARGET_MS,
        },
      ];
      const measured = MODES.filter((m) => perMode[m]);
      const rows: (string | number)[][] = measured.map((mode) => {
        const m = perMode[mode];
        const pg = m.postgres as { commitsPerDeliberation?: number; statementsPerDeliberation?: number };
        return [
          mode,
          ...PROCESSES.map((p) => m.median.msPerDeliberation[p] ?? '–'),
          `**${m.median.totalMs}**`,
          m.trials.map((t) => t.totalMs).join(' / '),
          `${pg.commitsPerDeliberation ?? '?'} / ${pg.statementsPerDeliberation ?? '?'}`,
        ];
      });
      const statementRows = (
        (perMode[COUNCIL_MODE].postgres.topStatements ?? []) as {
          perDeliberation: number;
          totalMs: number;
          query: string;
        }[]
      ).map((s) => [s.query, s.perDeliberation, round(s.totalMs / (perTrial * trials), 3)]);
      const limits: string[] = [];
      if (!checks[0].met) {
        limits.push(
          `The council costs ${council.totalMs} ms: ` +
            PROCESSES.map((p) => `${p} ${council.msPerDeliberation[p] ?? '–'} ms`).join(', ') +
            '. See the profiles and the statements above for where it goes.',
        );
      }
      return {
        name: 'cpu',
        title: this.title,
        target: this.target,
        parameters: {
          latencyMs: LATENCY_MS,
          deliberationsPerTrial: perTrial,
          trialsPerMode: trials,
          warmupPerMode: warmup,
          inFlight,
          workers: 1,
          workerConcurrency: 4 * inFlight,
          gateways: 1,
          followers: 'every deliberation followed by a Socket.IO client (5 connections)',
        },
        figures: {
          perMode: Object.fromEntries(
            measured.map((mode) => [
              mode,
              {
                msPerDeliberation: perMode[mode].median.msPerDeliberation,
                totalMs: perMode[mode].median.totalMs,
                trials: perMode[mode].trials,
                postgres: perMode[mode].postgres,
              },
            ]),
          ),
          idleMsPerSecond: idleMsPerS,
          ...(profiles ? { profiles } : {}),
        },
        checks,
        tables: [
          {
            caption:
              'CPU ms per deliberation (user + system time from /proc over a trial ÷ its deliberations; median of the trials; PostgreSQL = postmaster and every backend):',
            table: {
              columns: [
                'mode',
                ...PROCESSES.map((p) => p.replace(' (all backends)', '')),
                'total',
                'trials (total)',
                'PG commits / statements per deliberation',
              ],
              rows,
            },
          },
          {
            caption: `The council's busiest statements (pg_stat_statements, per deliberation):`,
            table: { columns: ['statement', 'calls', 'exec ms'], rows: statementRows },
          },
          ...(profiles
            ? [
                ...profileTables(profiles.worker, 'during the council trials', 'Worker'),
                ...profileTables(profiles.gateway, 'during the council trials', 'Gateway'),
              ]
            : []),
        ],
        method: [
          `Per mode: ${warmup} warm-up deliberations, then ${trials} trial(s) of ${perTrial} deliberations with at most ${inFlight} in flight, simulated models at ${LATENCY_MS} ms without jitter; every deliberation is followed to \`complete\` by a Socket.IO client (the gateway's fan-out counts).`,
          'CPU: user + system time of each process from /proc/<pid>/stat before and after a trial (PostgreSQL: the postmaster, its backends and the reaped ones), ÷ the trial’s deliberations; the table shows the median of the trials. The benchmark client is not counted.',
          `Idle (nothing running, for reference; included in the figures above for the length of a trial): ${PROCESSES.map((p) => `${p} ${idleMsPerS[p]} ms/s`).join(', ')}.`,
          'Statements and commits: pg_stat_statements and pg_stat_database over the trials of the mode (the client’s reads of the gateway included).',
        ],
        limits,
        evidence: {},
      };
    } finally {
      await stack.stop();
    }
  },
};

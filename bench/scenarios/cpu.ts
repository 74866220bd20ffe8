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

/**
 * This scenario on the code before issue 23's CPU work (commit 3eca9f6 with the engine, store,
 * stage-write function and worker jobs as they were; same harness), on this machine on
 * 2026-11-24, alternating with runs of the new code: the mean of two runs' medians, ms per
 * deliberation, and PostgreSQL commits / statements per deliberation.
 */
const BEFORE: Record<
  (typeof MODES)[number],
  { ms: [number, number, number, number]; total: number; pg: string }
> = {
  'council (4 models + chairman, title)': { ms: [8.8, 7.6, 3.4, 1.2], total: 21.4, pg: '17.3 / 22.1' },
  vote: { ms: [5.5, 4.3, 2.3, 0.8], total: 12.7, pg: '13.1 / 19.1' },
  jury: { ms: [6.9, 6.4, 2.3, 1.0], total: 16.5, pg: '15.7 / 21.1' },
  debate: { ms: [8.2, 6.8, 2.6, 1.3], total: 19.2, pg: '17 / 22.1' },
  delphi: { ms: [10.1, 9.4, 2.8, 1.6], total: 24.0, pg: '20.6 / 25.4' },
};

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
 * Experiments (the reports use the defaults): BENCH_CPU_TRIALS, BENCH_CPU_PER_TRIAL,
 * BENCH_CPU_WARMUP, BENCH_CPU_MODE_WARMUP, BENCH_CPU_IN_FLIGHT size the runs; BENCH_CPU_MODES=vote,jury runs those besides
 * the council; BENCH_CPU_NO_ANALYZE=1 leaves the statistics to autovacuum; BENCH_WORKER_NODE_OPTIONS
 * and BENCH_GATEWAY_NODE_OPTIONS (e.g. `--perf-basic-prof` for `perf record`) go to those processes.
 *
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
    const perTrial = knob('PER_TRIAL', ctx.quick ? 30 : 100);
    const trials = knob('TRIALS', ctx.quick ? 2 : 5);
    // Long enough for V8 to have optimised the hot paths: before that its compiler threads add a
    // third to the first trials' CPU.
    const warmup = knob('WARMUP', ctx.quick ? 20 : 300);
    // Each further mode: its own code paths warmed up before its trials.
    const modeWarmup = knob('MODE_WARMUP', ctx.quick ? 10 : 60);
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

      await batch(COUNCIL_MODE, warmup);
      // Statistics as autovacuum keeps them in a running system (it analyzes once a minute at most,
      // and this database is minutes old): without them, plans cached while the tables were empty
      // read the growing week's event partition whole (see the notes).
      if (!process.env.BENCH_CPU_NO_ANALYZE) await stack.db.query('ANALYZE');
      // Idle: what the stack burns with nothing to do (timers, BullMQ's stalled checks, pings).
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
      const modes = MODES.filter((m) => m === COUNCIL_MODE || !only || only.some((o) => m.startsWith(o)));
      for (const mode of modes) {
        if (mode !== COUNCIL_MODE) await batch(mode, modeWarmup);
        await sleep(300);
        await activity.reset();
        const done: Trial[] = [];
        let counted = perTrial * trials;
        for (let t = 0; t < trials; t++) {
          const from = ctx.sampler.cpu();
          await batch(mode, perTrial);
          // Let the last deliberations' trailing work (job completion, publishes) land in the window.
          await sleep(300);
          done.push(trialOf(from, ctx.sampler.cpu(), perTrial));
        }
        if (mode === COUNCIL_MODE && workerProfile && gatewayProfile) {
          // One more batch with the profilers on, not counted: sampling costs CPU of its own.
          startProfile(worker.child);
          startProfile(gateway.child);
          await batch(mode, perTrial);
          counted += perTrial;
          await Promise.all([
            stopProfile(worker.child, workerProfile),
            stopProfile(gateway.child, gatewayProfile),
          ]);
          profiles = { worker: summarizeProfile(workerProfile), gateway: summarizeProfile(gatewayProfile) };
          ctx.log(`  cpu: profiles written to ${workerProfile} and ${gatewayProfile}`);
        }
        // Statements and commits per deliberation (the profiled batch's included: the same work).
        const postgres = await activity.read(counted);
        perMode[mode] = { trials: done, median: medians(done), postgres };
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
      const beforeRows: (string | number)[][] = measured.map((mode) => {
        const before = BEFORE[mode];
        const after = perMode[mode].median;
        const pg = perMode[mode].postgres as {
          commitsPerDeliberation?: number;
          statementsPerDeliberation?: number;
        };
        return [
          mode,
          `${before.total} (${before.ms.join(' / ')})`,
          `**${after.totalMs}** (${PROCESSES.map((p) => after.msPerDeliberation[p] ?? '–').join(' / ')})`,
          `${Math.round((after.totalMs / before.total - 1) * 100)} %`,
          before.pg,
          `${pg.commitsPerDeliberation ?? '?'} / ${pg.statementsPerDeliberation ?? '?'}`,
        ];
      });
      const notes = [
        `Where the council's CPU went before (per deliberation, same harness): PostgreSQL ${BEFORE[COUNCIL_MODE].ms[0]} ms for 22 statements and 17 commits — conclave_stage_write 7 times (opening, the calls' outcomes, the commit of each of the 3 stages, and the title job's write), the whole message loaded 4 times (each stage job and the title job), a poll for the title; inside the function the calls' outcomes and stage rows, appending events (per row two unique indexes and the foreign-key check; the week partitioning itself costs nothing measurable: a 10-event append takes the same on a plain table) and, on every call, the row lock, parsing its jsonb argument and the WAL flush of its commit. Worker ${BEFORE[COUNCIL_MODE].ms[1]} ms: 4 BullMQ jobs (3 stages + title), 4 loads parsed from JSON, 7 writes serialized, the simulated models (a promise, a timer and an abort listener per streamed piece), GC. Gateway ${BEFORE[COUNCIL_MODE].ms[2]} ms: the request (Nest, validation, a 6-statement transaction, 2 BullMQ adds), the subscription and ~27 Socket.IO emits. Redis ${BEFORE[COUNCIL_MODE].ms[3]} ms: the jobs' scripts and the event publishes.`,
        `What changed: a stage's commit also opens the next stage (its start and 'started' events), and the worker that wrote it runs that stage from what it wrote when its job starts there for the first time (since issue 35 from what that commit's write answers it stored: the rows and outcomes as a load reads them) — no load, no planning twice, no opening write; the title call runs beside the first stage's calls and is stored with their outcomes (and since, the gateway enqueues no title job at all); conclave_stage_write answers with event keys and seqs instead of echoing the payloads, and moves the conversation's updated_at only when a message ends; the title wait asks less and less often; the simulated provider uses one timer per streamed piece and one abort listener per answer. Commits stay synchronous and every event is still stored before it is published.`,
        `Where it goes now (council): PostgreSQL ${council.msPerDeliberation['postgres (all backends)'] ?? '–'} ms for ${(perMode[COUNCIL_MODE].postgres as { statementsPerDeliberation?: number }).statementsPerDeliberation ?? '?'} statements — 5 stage writes (the first stage's opening and each stage's commit), which share a statement and a commit with other deliberations' writes that fall due at the same moment (GroupedWrites), and the gateway's own (budget, the request's transaction — 4 statements for a new conversation, 6 before —, the subscription's replay); worker ${council.msPerDeliberation['worker 1'] ?? '–'} ms, gateway ${council.msPerDeliberation['gateway 1'] ?? '–'} ms, Redis ${council.msPerDeliberation.redis ?? '–'} ms. A stage write costs PostgreSQL about 0.2 ms before it writes anything (the row lock, parsing its argument, the WAL flush of its commit) and about 0.15 ms more for its first event (the event statement's own setup; 15 µs each further one), so the next cuts are fewer writes, and they lie outside the engine. Since: the gateway enqueues no title job; its request stores both messages in one statement and skips the conversation update a new conversation does not need; a new conversation's first job carries the message as stored, so its first start runs without a load (the opening is still written, with its guard). Left: the first stage's opening could be written with the request's own transaction.`,
        'Group commit across deliberations (2026-11-25): stage writes of different deliberations that fall due together go as one statement and one commit (GroupedWrites, libs/persistence/src/grouped-writes.ts; measured with up to 8 groups in the database, 16 writes each; one group of up to 128 since, see the concurrency section). Measured in turns with the commit before it on the same host (the old code then measured council 13.1 ms, PostgreSQL 5.2 ms, 7.8 commits / 8.4 statements; vote 9.0 / 4.0; jury 11.7 / 4.3; debate 12.1 / 5.3; delphi 13.5 / 5.3 ms total / PostgreSQL): PostgreSQL per deliberation 20–30 % lower in every mode, commits per council about 5.4.',
        'Statistics: without the ANALYZE after the warm-up (BENCH_CPU_NO_ANALYZE=1) plans cached while the database was empty can read the growing week’s event partition whole (one run: 2.2 million rows read by sequential scans, +2–3 ms per council). A running system’s autovacuum keeps them current; a fresh database, and each week’s new partition in its first minutes, depend on it analysing soon.',
      ];
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
          warmupCouncils: warmup,
          warmupPerOtherMode: modeWarmup,
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
            caption:
              'Before and after the issue-23 CPU work (total, then PostgreSQL / worker / gateway / Redis, ms per deliberation; before: the constants in bench/scenarios/cpu.ts, measured alternating with the new code on this machine):',
            table: {
              columns: ['mode', 'before', 'this run', 'change', 'PG commits / statements before', 'now'],
              rows: beforeRows,
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
          `Per mode: warm-up deliberations (${warmup} councils first, then ${modeWarmup} of each further mode), then ${trials} trial(s) of ${perTrial} deliberations with at most ${inFlight} in flight, simulated models at ${LATENCY_MS} ms without jitter; every deliberation is followed to \`complete\` by a Socket.IO client (the gateway's fan-out counts).`,
          'After the councils’ warm-up: ANALYZE, the statistics autovacuum keeps in a running system (the database is minutes old; see the notes).',
          ...(ctx.quick
            ? [
                'With --quick the warm-up is too short for V8 to have optimised the hot paths: the figures run high.',
              ]
            : []),
          'CPU: user + system time of each process from /proc/<pid>/stat before and after a trial (PostgreSQL: the postmaster, its backends and the reaped ones), ÷ the trial’s deliberations; the table shows the median of the trials. The benchmark client is not counted.',
          `Idle (nothing running, for reference; included in the figures above for the length of a trial): ${PROCESSES.map((p) => `${p} ${idleMsPerS[p]} ms/s`).join(', ')}.`,
          'Statements and commits: pg_stat_statements and pg_stat_database over the trials of the mode (the client’s reads of the gateway included).',
        ],
        limits,
        notes,
        evidence: {},
      };
    } finally {
      await stack.stop();
    }
  },
};

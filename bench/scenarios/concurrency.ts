import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { profilerEnv, startProfile, stopProfile } from '../lib/profile';
import { startDeliberation, type Follower } from '../lib/client';
import { ProcSampler } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { mapLimit, max, round, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LATENCY_MS = 2000;
const LAYERS = 3; // council: stage 1, stage 2, stage 3
const CRITICAL_PATH_MS = LAYERS * LATENCY_MS;
const ALLOWED_MS = CRITICAL_PATH_MS * 1.2;
const RSS_LIMIT_MB = 512;
const COUNCIL = ['sim/athena', 'sim/hermes', 'sim/apollo', 'sim/artemis'];
/** This burst on the code before issue 23's CPU work (see the notes; bench/scenarios/cpu.ts has the per-mode figures). */
const BEFORE = {
  totalMs: 21.0,
  parts: 'PostgreSQL 8.1, worker 8.2, gateway 3.7, Redis 1.0 ms',
  maxMs: 11288,
  coldMs: 24.6,
  coldAfterMs: 19.4,
};

/** The largest number of intervals open at once. */
function peakOverlap(intervals: [number, number][]): number {
  const points = intervals.flatMap(([a, b]) => [
    [a, 1],
    [b, -1],
  ]);
  points.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let peak = 0;
  for (const [, d] of points) {
    open += d;
    peak = Math.max(peak, open);
  }
  return peak;
}

/**
 * Where each deliberation's time went, from its stage jobs' BullMQ timestamps: the wait in the queue
 * before a worker took the job, the job's run beyond its model latency, and the hand-off from the
 * last job's end to the client's `complete`.
 */
async function burstTimeline(
  stack: BenchStack,
  runs: { messageId: string; acceptedAt: number; terminalAt: number }[],
): Promise<Record<string, ReturnType<typeof summary>>> {
  const jobs = await stack.completedJobs();
  const byMessage = new Map<
    string,
    { stage: string; timestamp: number; processedOn: number; finishedOn: number }[]
  >();
  for (const job of jobs) {
    const [messageId, stage] = String(job.id).split('__');
    if (!stage || stage === 'title') continue;
    const list = byMessage.get(messageId) ?? [];
    list.push({
      stage,
      timestamp: job.timestamp,
      processedOn: job.processedOn ?? NaN,
      finishedOn: job.finishedOn ?? NaN,
    });
    byMessage.set(messageId, list);
  }
  // The slowest call of each stage as the worker timed it, and when the transaction that stored the
  // last of them began (PostgreSQL's now()).
  const calls: { message_id: string; stage: string; slowest: number; writes: number; stored_at: number }[] =
    await stack.db.query(
      `SELECT message_id, stage, max(response_time_ms)::int AS slowest, count(DISTINCT created_at)::int AS writes,
       (EXTRACT(EPOCH FROM max(created_at)) * 1000)::float AS stored_at
     FROM model_calls WHERE message_id = ANY($1) AND stage <> 'title' GROUP BY message_id, stage`,
      [runs.map((r) => r.messageId)],
    );
  // When the first stage's opening (its start event, written by the worker after it loaded the
  // message) was stored.
  const openings: { message_id: string; at: number }[] = await stack.db.query(
    `SELECT message_id, (EXTRACT(EPOCH FROM min(created_at)) * 1000)::float AS at FROM deliberation_events
     WHERE message_id = ANY($1) AND type = 'stage1_start' GROUP BY message_id`,
    [runs.map((r) => r.messageId)],
  );
  const openedAt = new Map(openings.map((o) => [o.message_id, o.at]));
  const callsOf = new Map(calls.map((c) => [`${c.message_id}__${c.stage}`, c]));
  const series: Record<string, number[]> = {};
  const add = (key: string, value: number) => (series[key] ??= []).push(value);
  for (const run of runs) {
    const list = (byMessage.get(run.messageId) ?? []).sort((a, b) => a.timestamp - b.timestamp);
    if (list.length === 0) continue;
    add('202 → first job enqueued', list[0].timestamp - run.acceptedAt);
    const opened = openedAt.get(run.messageId);
    if (opened !== undefined) add('stage 1: started → opening write began', opened - list[0].processedOn);
    list.forEach((job, i) => {
      add(`stage ${i + 1}: queued → started`, job.processedOn - job.timestamp);
      add(`stage ${i + 1}: run − model latency`, job.finishedOn - job.processedOn - LATENCY_MS);
      const stored = callsOf.get(`${run.messageId}__${job.stage}`);
      if (stored) {
        add(`stage ${i + 1}: slowest call − model latency`, stored.slowest - LATENCY_MS);
        add(`stage ${i + 1}: transactions storing its calls`, stored.writes);
        add(`stage ${i + 1}: started → last calls' write began`, stored.stored_at - job.processedOn);
        add(`stage ${i + 1}: last calls' write began → finished`, job.finishedOn - stored.stored_at);
      }
      if (i > 0) add(`stage ${i + 1}: previous finished → enqueued`, job.timestamp - list[i - 1].finishedOn);
    });
    add('last job finished → client complete', run.terminalAt - list[list.length - 1].finishedOn);
  }
  return Object.fromEntries(Object.entries(series).map(([k, v]) => [k, summary(v, 0)]));
}

export const concurrency: Scenario = {
  name: 'concurrency',
  title: 'Concurrency in one worker',
  target: `every deliberation completes within critical path + 20 % (${ALLOWED_MS / 1000} s); worker RSS ≤ ${RSS_LIMIT_MB} MB`,
  async run(ctx) {
    const count = ctx.quick ? 40 : 1000;
    // Room for every deliberation's stage job at once, with margin (the title call runs inside it).
    const workerConcurrency = 2 * count;
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: String(workerConcurrency),
    }).init();
    try {
      // BENCH_CONCURRENCY_PROFILE=1 (or worker) profiles the worker through the burst; =gateway the gateway.
      const profiled = process.env.BENCH_CONCURRENCY_PROFILE === 'gateway' ? 'gateway' : 'worker';
      const profile = process.env.BENCH_CONCURRENCY_PROFILE
        ? path.join(tmpdir(), `conclave-bench-concurrency-${profiled}-${Date.now()}.cpuprofile`)
        : null;
      const workerProfile = profiled === 'worker' ? profile : null;
      const gatewayProfile = profiled === 'gateway' ? profile : null;
      const [gateway, worker] = await Promise.all([
        stack.spawnGateway(gatewayProfile ? profilerEnv(gatewayProfile) : {}),
        stack.spawnWorker({
          ...(workerProfile ? profilerEnv(workerProfile) : {}),
          ...(process.env.BENCH_WORKER_NODE_OPTIONS
            ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS }
            : {}),
        }),
      ]);
      const followers: Follower[] = [];
      for (let i = 0; i < 10; i++) followers.push(await stack.follower());
      // Warm-up deliberations (code paths compiled before the burst), then statistics as a running
      // system's autovacuum keeps them: this database is seconds old, and plans cached while its
      // tables were empty would read the growing week's event partition whole through the burst.
      await mapLimit(
        Array.from({ length: ctx.quick ? 5 : 50 }, (_, i) => i),
        10,
        async (i) =>
          followers[i % followers.length].follow(
            (
              await startDeliberation(stack.baseUrl, {
                question: `warm-up ${i}`,
                councilModels: COUNCIL,
                chairmanModel: 'sim/chair',
              })
            ).messageId,
            60_000,
          ),
      );
      await stack.db.query('ANALYZE');

      let peakConnections = 0;
      const connections = setInterval(() => {
        stack.db
          .query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()`)
          .then(([row]: { n: number }[]) => (peakConnections = Math.max(peakConnections, row.n)))
          .catch(() => undefined);
      }, 500);
      const from = ctx.sampler.cpu();
      ctx.sampler.resetPeaks();
      if (profile) startProfile((profiled === 'gateway' ? gateway : worker).child);
      const t0 = Date.now();
      const runs = await mapLimit(
        Array.from({ length: count }, (_, i) => i),
        64,
        async (i) => {
          const accepted = await startDeliberation(stack.baseUrl, {
            question: `Concurrent question ${i}: which of four options is best?`,
            councilModels: COUNCIL,
            chairmanModel: 'sim/chair',
          });
          return { accepted, done: followers[i % followers.length].follow(accepted.messageId, 180_000) };
        },
      );
      const submittedS = (Date.now() - t0) / 1000;
      const followed = await Promise.all(runs.map((r) => r.done));
      clearInterval(connections);
      if (profile) {
        await stopProfile((profiled === 'gateway' ? gateway : worker).child, profile);
        ctx.log(`  concurrency: ${profiled} profile of the burst written to ${profile}`);
      }
      const cpu = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
      const peakRssMb = ctx.sampler.peakRss();
      const workerRss = peakRssMb[worker.label] ?? Number.NaN;

      const failed = followed.filter((f) => f.terminal !== 'complete').length;
      if (failed === count) throw new HarnessError('no deliberation completed');
      const latencies = runs.map((r, i) => followed[i].terminalAt - r.accepted.acceptedAt);
      const ids = runs.map((r) => r.accepted.messageId);
      const pg: { ms: number; layers: number }[] = await stack.db.query(
        `SELECT (EXTRACT(EPOCH FROM m.completed_at - m.created_at) * 1000)::float AS ms,
           (SELECT count(DISTINCT stage)::int FROM model_calls c WHERE c.message_id = m.id AND c.stage <> 'title') AS layers
         FROM messages m WHERE m.id = ANY($1)`,
        [ids],
      );
      const timeline = await burstTimeline(
        stack,
        runs.map((r, i) => ({
          messageId: r.accepted.messageId,
          acceptedAt: r.accepted.acceptedAt,
          terminalAt: followed[i].terminalAt,
        })),
      );
      const peakInFlight = peakOverlap(runs.map((r, i) => [r.accepted.acceptedAt, followed[i].terminalAt]));
      const latency = summary(latencies, 0);
      const within = latencies.filter((l) => l <= ALLOWED_MS).length;
      const checks: Check[] = [
        {
          what: `all ${count} complete within ${ALLOWED_MS / 1000} s of their 202`,
          target: `max ≤ ${ALLOWED_MS} ms`,
          value: `max ${latency.max} ms (${within} of ${count} within)`,
          met: latency.max <= ALLOWED_MS && failed === 0,
        },
        {
          what: 'worker peak RSS',
          target: `≤ ${RSS_LIMIT_MB} MB`,
          value: `${workerRss} MB`,
          met: workerRss <= RSS_LIMIT_MB,
        },
      ];
      const perUnit = ProcSampler.perUnit(cpu, count);
      const cpuSecondsNeeded = round((perUnit.totalMs * count) / 1000 / cpu.cores, 1);
      const limits: string[] = [];
      if (!checks[0].met) {
        const arrivalsPerS = count / Math.max(0.001, submittedS);
        const workerMs = perUnit.msPerUnit[worker.label] ?? Number.NaN;
        const burstCores = round((arrivalsPerS * perUnit.totalMs) / 1000, 2);
        const burstWorkerCores = round((arrivalsPerS * workerMs) / 1000, 2);
        const slowest = Object.entries(timeline)
          // Overheads only: not counts, nor spans that hold the calls' 2 s.
          .filter(
            ([what]) => !what.includes('transactions') && !what.includes("started → last calls' write began"),
          )
          .sort((x, y) => y[1].p95 - x[1].p95)
          .slice(0, 4)
          .map(([what, s]) => `${what} p50 ${s.p50} / p95 ${s.p95} ms`);
        limits.push(
          `CPU in the burst, not waiting on anything: each deliberation (9 model calls and a title) costs ` +
            `${perUnit.totalMs} ms of CPU across the stack (` +
            Object.entries(perUnit.msPerUnit)
              .sort((a, b) => b[1] - a[1])
              .map(([label, ms]) => `${label} ${ms} ms`)
              .join(', ') +
            `). The ${count} arrive in ${round(submittedS)} s (${round(arrivalsPerS, 0)}/s), and each stage's ` +
            `work lands 2 s after the previous one's, so while they arrive the stack is asked for about ` +
            `${burstCores} cores (${cpu.cores} here, the benchmark client besides) and the one worker process ` +
            `for ${burstWorkerCores} of a core (it has one thread). In all, the ${count} need ≈ ${cpuSecondsNeeded} s ` +
            `of both cores, well inside the run: the work is late because it comes at once, and every ` +
            `deliberation that arrives in the burst waits behind the others' at each of its stages. ` +
            `Latency: p50 ${latency.p50} ms, p95 ${latency.p95} ms, max ${latency.max} ms against a ` +
            `${CRITICAL_PATH_MS} ms critical path. Where it went (see timelineMs): ${slowest.join('; ')}. ` +
            `Over the run: ${describeCpu(cpu)}.`,
          `Connections: the worker keeps WORKER_DB_POOL connections (default 20 here) however many stages ` +
            `it runs; the run peaked at ${peakConnections} PostgreSQL connections across gateway and worker. ` +
            `10 or 40 connections measured the same within the noise: a statement waits for the worker's busy ` +
            `thread and PostgreSQL's busy cores, not for a connection.`,
          `What would move it: less CPU per deliberation or more cores. The burst stops queueing once ` +
            `arrivals × CPU per deliberation stays under the cores: at ${round(arrivalsPerS, 0)}/s that is ≤ ` +
            `${round((cpu.cores * 1000) / arrivalsPerS, 1)} ms each on ${cpu.cores} cores, and one worker ` +
            `process's share under one core.`,
        );
      }
      if (!checks[1].met) {
        limits.push(
          `Worker memory: ${workerRss} MB with ${count} deliberations (${workerConcurrency} jobs) in flight — ` +
            `BullMQ job objects and their locks, pg clients with their buffers, pending promises and timers.`,
        );
      }
      return {
        name: 'concurrency',
        title: this.title,
        target: this.target,
        parameters: {
          deliberations: count,
          mode: 'council, 4 council models + chairman',
          latencyMs: LATENCY_MS,
          criticalPathMs: CRITICAL_PATH_MS,
          workers: 1,
          workerConcurrency,
          gateways: 1,
          titles: 'generated (new conversations: the title call beside stage 1, in its job)',
        },
        figures: {
          latencyMs: latency,
          pgLatencyMs: summary(
            pg.map((r) => r.ms),
            0,
          ),
          layers: [...new Set(pg.map((r) => r.layers))],
          completed: count - failed,
          failed,
          submissionSeconds: round(submittedS),
          peakInFlight,
          peakPostgresConnections: peakConnections,
          workerPeakRssMb: workerRss,
          cpuMsPerDeliberation: perUnit,
          cpuSecondsOfBothCoresNeeded: cpuSecondsNeeded,
          timelineMs: timeline,
        },
        checks,
        tables: [
          {
            table: {
              columns: [
                'deliberations',
                'submitted in',
                'peak in flight',
                '202 → complete p50 / p95 / max (ms)',
                'PG created → completed max (ms)',
                'critical path + 20 %',
                'worker peak RSS',
                'peak PG connections',
              ],
              rows: [
                [
                  count,
                  `${round(submittedS)} s`,
                  peakInFlight,
                  `${latency.p50} / ${latency.p95} / **${latency.max}**`,
                  round(max(pg.map((r) => r.ms)), 0),
                  `${ALLOWED_MS} ms`,
                  `**${workerRss} MB**`,
                  peakConnections,
                ],
              ],
            },
          },
          {
            caption:
              'Where each deliberation’s time went (ms; stage jobs’ BullMQ timestamps, model_calls and the opening event in PostgreSQL):',
            table: {
              columns: ['', 'p50', 'p95', 'max'],
              rows: Object.entries(timeline).map(([what, s]) => [what, s.p50, s.p95, s.max]),
            },
          },
        ],
        method: [
          `${count} council deliberations (4 council models and a chairman: 3 sequential layers of model calls, ${LATENCY_MS} ms each, no jitter) are posted as fast as 64 concurrent HTTP clients can, to one gateway; one worker process with WORKER_CONCURRENCY ${workerConcurrency} (a job per stage; the title call runs in the first stage's job).`,
          `Before the burst: ${ctx.quick ? 5 : 50} warm-up deliberations, then ANALYZE (the statistics autovacuum keeps in a running system; the scenario's database is seconds old).`,
          `Ten Socket.IO connections share the subscriptions; each deliberation's latency is its own HTTP 202 → \`complete\` at the client, against ${CRITICAL_PATH_MS} ms + 20 %.`,
          'Cross-check: PostgreSQL `completed_at − created_at`; layers from `model_calls`. Worker RSS: VmRSS of its process sampled every 200 ms, maximum.',
          'Where the time went: per deliberation, from its stage jobs (enqueued, started, finished), the slowest call of each stage as the worker timed it, the start of the transaction that stored the stage’s last calls (PostgreSQL now() of model_calls.created_at) and of the first stage’s opening (its `stage1_start` event); “run − model latency” is a job’s run beyond the 2 s of its calls. `BENCH_CONCURRENCY_PROFILE=1` also takes a CPU profile of the worker through the burst.',
        ],
        limits,
        notes: [
          `Before issue 23's CPU work (the same harness on this machine, 2026-11-24, alternating with the new code): ${BEFORE.totalMs} ms of CPU per deliberation (${BEFORE.parts}), latency max ${BEFORE.maxMs} ms; this run: ${perUnit.totalMs} ms, max ${latency.max} ms. In a database without the warm-up and ANALYZE, and with the title job's polling, the same burst measured ${BEFORE.coldMs} ms before and ${BEFORE.coldAfterMs} ms after.`,
          `Since (2026-11-24, later): the simulated provider kept each streamed piece on a timer chained to the previous one, so a busy worker stretched every 2 s answer by each piece's delay (20 pieces: stage 1 ran ~1 s over its 2 s at the median in this burst); pieces now fall due on the provider's clock, as a real stream's do. The gateway no longer enqueues a title job that did nothing, and a new conversation's first job carries the message as stored, so its first start does not load it. On the quiet machine, in turns, those took the burst from max ≈ 8.4–8.8 s (12.9–13.4 ms of CPU each) to ≈ 7.7–8.6 s (11.2–11.7 ms).`,
          'Group commit across deliberations (2026-11-25; the slower host): stage writes of different deliberations that fall due together now go as one statement and one commit (GroupedWrites; up to 8 groups in the database, 16 writes each). Alternating runs with the commit before it: CPU per deliberation 14.3 / 14.6 → 11.5 / 12.0 ms (PostgreSQL 5.0 / 5.2 → 3.4 / 3.6 ms, worker 5.8 / 5.8 → 4.9 / 5.1 ms), latency max 8905 / 8346 → 8002 / 8216 ms. In the burst a write then waits in the worker p50 up to 150–200 ms at the peak (groups of 10–15 taking 40–100 ms each while both cores are busy) instead of as one of 20 backends: the machine does less, but the peak still asks for more than its two cores.',
          'How many groups at once (2026-11-25, later): the same burst in alternating pairs, median latency (max) — 8 groups × 16 writes 7069 (7614) / 4 × 32 6873 (7467); 8 × 16 7379 (7998) / 4 × 32 6721 (7385); 4 × 32 7236 (7716) / 2 × 64 6626 (7317); 4 × 32 7531 (8210) / 2 × 64 6594 (7206); 2 × 64 7093 (7961) / 1 × 128 6592 (6995, all 1000 within); 2 × 64 7330 (7752) / 1 × 128 7076 (7959) ms. Each halving of the groups in flight lowered the median in both of its pairs; the default is now one group at a time, up to 128 writes (fewer PostgreSQL backends competing for the two cores, fewer commits). Starting the next group on a microtask instead of the next turn, tried the same way, was worse (median 7178 / 7157 against 6996 / 6976 ms) and was not kept.',
          'Work per streamed piece and per event (2026-11-25, a later session; an AMD EPYC host): the simulated provider’s streamed pieces share one timer per millisecond (it was a timer per piece, each an async resource: about 45 000 a second at the burst’s peak); a group of stage writes is built as one flat string; an answer is searched for echoed fence markers only when it holds one; the simulated provider finds a prompt’s fences without splitting it into lines; and what one Socket.IO connection is sent in one turn leaves in one write. Alternating with the session’s first commit (01d7d82): worker CPU per deliberation 4.4 / 4.7 → 4.1 / 4.2 ms, latency max 7222 / 7298 → 6971 / 6691 ms; the socket writes alone (against f092595): median 6966 / 6675 → 6581 / 6535 ms. With SIM_STREAM_PIECES=1 (answers not streamed) the burst measured a median of 6155 ms against 6612 with 20 pieces before the shared timer, and the same as with 20 after it (6442 / 6398 ms): the stand-in’s streaming no longer costs the burst anything. Four runs at 9a71d27: max 6852, 7600, 6813, 6820 ms (1000, 731, 1000 and 1000 of 1000 within 7.2 s); the miss had the lowest CPU per deliberation of the four (9.8 ms) and a median 600 ms above the others’: a slower moment of the host, not more work. Tried and not kept: four BullMQ workers in the one process (a fetch loop each), to start fetched jobs sooner; the wait from a job’s fetch to its start (p95 300–500 ms at the peak) did not shrink: it is the busy event loop, not BullMQ fetching one job at a time.',
          'Later the same session: a Socket.IO subscription checks ownership and replays in one statement (one PostgreSQL round trip fewer per subscription, so per deliberation here; not measured apart). Tried and not kept: stage events published on a connection of their own with ioredis auto-pipelining (the PUBLISHes of a group’s deliberations in one write) measured worse in both alternating pairs (median 6700 / 6475 against 6442 / 6217 ms, worker 4.4 / 4.5 against 4.3 / 4.0 ms); `--max-semi-space-size=32` for the worker, again, within the noise (median 6703 / 6485 against 6413 / 6414 ms). Three runs of the burst on its own at b6de2aa, one after another: max 6590, 6366 and 6697 ms (all 1000 within 7.2 s each time; medians 6278, 6141, 6309 ms).',
        ],
        evidence: { cpu: { burst: cpu }, peakRssMb: { burst: peakRssMb } },
      };
    } finally {
      await stack.stop();
    }
  },
};

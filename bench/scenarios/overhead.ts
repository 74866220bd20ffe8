import { DELTA_INTERVAL_MS, type LiveEvent } from '@conclave/contracts';
import type { Job } from 'bullmq';
import { DbActivity } from '../lib/batch';
import { calibrate } from '../lib/calibrate';
import { startDeliberation, type Followed } from '../lib/client';
import { tallyLive } from '../lib/live';
import { ProcSampler } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { percentile, round, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import {
  profilerEnv,
  startProfile,
  stopProfile,
  profileTables,
  summarizeProfile,
  type ProfileSummary,
} from '../lib/profile';

const LATENCY_MS = 200;
const PER_STAGE_P50_MS = 15;
const PER_STAGE_P95_MS = 40;
/** A run with a following client that asked for deltas after every this many plain runs (full size). */
const DELTAS_EVERY = 3;
/** Council again, as the second turn of the same conversation: no title call. */
const FOLLOW_UP = 'council follow-up (no title)';

/** One request per mode; the question varies per run so the simulated answers (and ties) vary too. */
export function requestFor(mode: string, run: number): Record<string, unknown> {
  const question = `Benchmark question ${run}: how many bridges does a city of a million people need?`;
  switch (mode) {
    case 'council':
      return {
        question,
        councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'],
        chairmanModel: 'sim/chair',
      };
    case 'vote':
      return { question, mode: 'vote', modeConfig: { models: ['sim/v1', 'sim/v2', 'sim/v3'] } };
    case 'jury':
      return {
        question,
        mode: 'jury',
        modeConfig: {
          content: `Answer ${run}: about one bridge per ten thousand people, depending on rivers.`,
          jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
          foremanModel: 'sim/foreman',
        },
      };
    case 'debate':
      return { question, mode: 'debate', modeConfig: { models: ['sim/d1', 'sim/d2', 'sim/d3'] } };
    case 'delphi':
      return {
        question,
        mode: 'delphi',
        modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'], facilitatorModel: 'sim/f' },
      };
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

interface Run {
  mode: string;
  messageId: string;
  acceptedAt: number;
  completeAt: number;
  terminal: string;
  /** When the stored `complete` event was written (its `at`, PostgreSQL clock_timestamp()). */
  completeStoredAt: number;
  /** The following client subscribed with `deltas: true`. */
  deltas: boolean;
  /** With deltas: what the client received, and when its subscription was acknowledged. */
  followed?: Followed;
  subscribedAt?: number;
}

/** What a run with deltas received, stitched per call and compared with the stored answers. */
interface LiveSummary {
  calls: number;
  complete: number;
  incomplete: number;
  mismatched: number;
  deltas: number;
  partials: number;
  /** What went wrong, if anything (a few). */
  examples: string[];
}

interface Measured extends Omit<Run, 'followed' | 'subscribedAt'> {
  live: LiveSummary | null;
  elapsedMs: number;
  layers: number;
  calls: number;
  stageJobs: number;
  overheadMs: number;
  perStageMs: number;
  pgElapsedMs: number;
  /** Slowest call of each layer, summed: the model time actually spent on the critical path. */
  modelMs: number;
  split: { firstPickupMs: number; inJobsMs: number; betweenJobsMs: number; afterLastJobMs: number } | null;
}

/** Splits the time from 202 to `complete` with the BullMQ timestamps of the message's stage jobs. */
function splitOf(run: Run, jobs: Job[], layerStages: Set<string>): Measured['split'] {
  if (jobs.length === 0 || jobs.some((j) => !j.processedOn || !j.finishedOn)) return null;
  const sorted = [...jobs].sort((a, b) => (a.processedOn ?? 0) - (b.processedOn ?? 0));
  let inJobs = 0;
  let between = 0;
  sorted.forEach((job, i) => {
    const stage = (job.data as { stage: string }).stage;
    inJobs += (job.finishedOn ?? 0) - (job.processedOn ?? 0) - (layerStages.has(stage) ? LATENCY_MS : 0);
    if (i > 0) between += (job.processedOn ?? 0) - (sorted[i - 1].finishedOn ?? 0);
  });
  return {
    firstPickupMs: round((sorted[0].processedOn ?? 0) - run.acceptedAt),
    inJobsMs: round(inJobs),
    betweenJobsMs: round(between),
    afterLastJobMs: round(run.completeAt - (sorted[sorted.length - 1].finishedOn ?? 0)),
  };
}

export const overhead: Scenario = {
  name: 'overhead',
  title: 'Overhead per stage',
  target: `p50 ≤ ${PER_STAGE_P50_MS} ms and p95 ≤ ${PER_STAGE_P95_MS} ms per sequential stage`,
  async run(ctx) {
    const runs = ctx.quick ? 2 : 30;
    const warmup = ctx.quick ? 1 : 2;
    const deltasEvery = ctx.quick ? 1 : DELTAS_EVERY;
    const modes = ['council', 'vote', 'jury', 'debate', 'delphi'];
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: '16',
    }).init();
    try {
      // With --profile (full runs take it by default): the worker's CPU profile over every mode's runs.
      const profileFile = ctx.profile
        ? path.join(tmpdir(), `conclave-bench-overhead-worker-${Date.now()}.cpuprofile`)
        : null;
      const [, worker] = await Promise.all([
        stack.spawnGateway(),
        stack.spawnWorker(profileFile ? profilerEnv(profileFile) : {}),
      ]);
      const follower = await stack.follower();
      // A second client that asks for deltas: every few runs one more deliberation is followed by it.
      const deltaFollower = await stack.follower();
      if (profileFile) startProfile(worker.child);
      let profile: ProfileSummary | null = null;
      const measured: Run[] = [];
      const warm: string[] = [];
      const cpuFrom = ctx.sampler.cpu();
      ctx.sampler.resetPeaks();
      const dbPerMode: Record<string, Record<string, unknown>> = {};
      const activity = new DbActivity(stack.db);
      for (const mode of modes) {
        /** Deliberations since the activity counters were reset (plain, follow-ups and with deltas). */
        let counted = 0;
        for (let i = 0; i < warmup + runs; i++) {
          if (i === warmup) await activity.reset();
          if (i === 0 || (i >= warmup && (i - warmup) % deltasEvery === 0)) {
            // The same request followed by a client with deltas on (the first one warms that path up).
            const live = await startDeliberation(stack.baseUrl, requestFor(mode, i));
            let subscribedAt = Infinity;
            const followedLive = await deltaFollower.follow(
              live.messageId,
              60_000,
              (at) => {
                subscribedAt = at;
              },
              { deltas: true },
            );
            if (i >= warmup) {
              counted += 1;
              measured.push({
                mode,
                messageId: live.messageId,
                acceptedAt: live.acceptedAt,
                completeAt: followedLive.terminalAt,
                terminal: followedLive.terminal,
                completeStoredAt: Date.parse(
                  followedLive.received[followedLive.received.length - 1].event.at,
                ),
                deltas: true,
                followed: followedLive,
                subscribedAt,
              });
            }
          }
          const accepted = await startDeliberation(stack.baseUrl, requestFor(mode, i));
          const followed = await follower.follow(accepted.messageId, 60_000);
          if (i < warmup) {
            warm.push(accepted.messageId);
            continue;
          }
          counted += 1;
          const last = followed.received[followed.received.length - 1];
          measured.push({
            mode,
            messageId: accepted.messageId,
            acceptedAt: accepted.acceptedAt,
            completeAt: followed.terminalAt,
            terminal: followed.terminal,
            completeStoredAt: Date.parse(last.event.at),
            deltas: false,
          });
          if (mode === 'council' && followed.terminal === 'complete') {
            // The same council again as a follow-up in that conversation: no title call, so the
            // difference shows what waiting for the title costs a new conversation.
            const again = await startDeliberation(stack.baseUrl, {
              ...requestFor(mode, i),
              conversationId: accepted.conversationId,
            });
            const next = await follower.follow(again.messageId, 60_000);
            counted += 1;
            measured.push({
              mode: FOLLOW_UP,
              messageId: again.messageId,
              acceptedAt: again.acceptedAt,
              completeAt: next.terminalAt,
              terminal: next.terminal,
              completeStoredAt: Date.parse(next.received[next.received.length - 1].event.at),
              deltas: false,
            });
          }
        }
        dbPerMode[mode] = await activity.read(counted);
        ctx.log(`  overhead: ${mode} done (${runs} runs)`);
      }
      if (profileFile) {
        await stopProfile(worker.child, profileFile);
        profile = summarizeProfile(profileFile);
        ctx.log(`  overhead: worker CPU profile written to ${profileFile}`);
      }
      const yardstick = await calibrate(stack.db);
      const cpu = ProcSampler.report(cpuFrom, ctx.sampler.cpu(), cpus().length);
      const peakRssMb = ctx.sampler.peakRss();

      // PostgreSQL: the model-call layers of each message (title excluded: it runs beside stage 1)
      // and its stored start and end.
      const ids = measured.map((r) => r.messageId);
      const callRows: { message_id: string; stage: string; calls: number; slowest: number }[] =
        await stack.db.query(
          `SELECT message_id, stage, count(*)::int AS calls, max(response_time_ms)::int AS slowest
           FROM model_calls WHERE message_id = ANY($1) AND stage <> 'title' GROUP BY message_id, stage`,
          [ids],
        );
      const messageRows: { id: string; status: string; ms: number }[] = await stack.db.query(
        `SELECT id, status, (EXTRACT(EPOCH FROM completed_at - created_at) * 1000)::float AS ms
         FROM messages WHERE id = ANY($1)`,
        [ids],
      );
      const jobs = await stack.completedJobs();
      const jobsByMessage = new Map<string, Job[]>();
      for (const job of jobs) {
        const messageId = (job.data as { messageId?: string }).messageId;
        if (messageId) jobsByMessage.set(messageId, [...(jobsByMessage.get(messageId) ?? []), job]);
      }

      const results: Measured[] = measured.map(({ followed, subscribedAt, ...run }) => {
        const layers = callRows.filter((r) => r.message_id === run.messageId);
        const all = jobsByMessage.get(run.messageId) ?? [];
        // Stage jobs only: the title call runs inside the first stage's job (no job of its own).
        const stageJobs = all.filter((j) => j.name === 'run-stage');
        const elapsedMs = run.completeAt - run.acceptedAt;
        const overheadMs = elapsedMs - layers.length * LATENCY_MS;
        const jobCount = stageJobs.length || layers.length;
        let live: LiveSummary | null = null;
        if (followed) {
          const late = (deltaFollower.late.get(run.messageId) ?? [])
            .filter((l) => l.name === 'model_delta' || l.name === 'model_partial')
            .map((l) => ({ at: l.at, event: l.event as LiveEvent }));
          const t = tallyLive(followed, subscribedAt ?? Infinity, late);
          live = {
            calls: t.calls - t.endedBeforeSubscribed,
            complete: t.complete,
            incomplete: t.incomplete,
            mismatched: t.mismatched,
            deltas: t.deltas,
            partials: t.partials,
            examples: t.examples.slice(0, 3),
          };
        }
        return {
          ...run,
          live,
          elapsedMs: round(elapsedMs),
          layers: layers.length,
          calls: layers.reduce((n, r) => n + r.calls, 0),
          stageJobs: jobCount,
          overheadMs: round(overheadMs),
          perStageMs: round(overheadMs / jobCount),
          pgElapsedMs: round(messageRows.find((m) => m.id === run.messageId)?.ms ?? Number.NaN),
          modelMs: layers.reduce((n, r) => n + r.slowest, 0),
          split: splitOf(run, stageJobs, new Set(layers.map((l) => l.stage))),
        };
      });
      const notComplete = results.filter((r) => r.terminal !== 'complete');
      if (results.length - notComplete.length === 0) throw new HarnessError('no deliberation completed');

      const checks: Check[] = [];
      const rows: (string | number)[][] = [];
      const splitRows: (string | number)[][] = [];
      const perMode: Record<string, unknown> = {};
      for (const mode of [...modes, FOLLOW_UP]) {
        const ok = results.filter((r) => r.mode === mode && !r.deltas && r.terminal === 'complete');
        const per = ok.map((r) => r.perStageMs);
        const stat = summary(per);
        const total = summary(ok.map((r) => r.overheadMs));
        const stageJobs = [...new Set(ok.map((r) => r.stageJobs))].sort().join('/');
        const layers = [...new Set(ok.map((r) => r.layers))].sort().join('/');
        const met = stat.p50 <= PER_STAGE_P50_MS && stat.p95 <= PER_STAGE_P95_MS;
        if (mode !== FOLLOW_UP)
          checks.push({
            what: `${mode}: overhead per stage p50 / p95`,
            target: `≤ ${PER_STAGE_P50_MS} / ≤ ${PER_STAGE_P95_MS} ms`,
            value: `${stat.p50} / ${stat.p95} ms`,
            met,
          });
        const splits = ok.map((r) => r.split).filter((s) => s !== null);
        const med = (pick: (s: NonNullable<Measured['split']>) => number) =>
          round(percentile(splits.map(pick), 50));
        const split = {
          firstPickupMs: med((s) => s.firstPickupMs),
          inJobsMs: med((s) => s.inJobsMs),
          betweenJobsMs: med((s) => s.betweenJobsMs),
          afterLastJobMs: med((s) => s.afterLastJobMs),
        };
        perMode[mode] = {
          runs: ok.length,
          failedRuns: results.filter((r) => r.mode === mode && !r.deltas).length - ok.length,
          stageJobs,
          modelCallLayers: layers,
          elapsedMs: summary(ok.map((r) => r.elapsedMs)),
          overheadMs: total,
          overheadPerStageMs: stat,
          pgElapsedMs: summary(ok.map((r) => r.pgElapsedMs)),
          modelMsOnCriticalPath: summary(ok.map((r) => r.modelMs)),
          completeStoredToClientMs: summary(ok.map((r) => r.completeAt - r.completeStoredAt)),
          medianSplitMs: split,
          postgresPerDeliberation: dbPerMode[mode === FOLLOW_UP ? 'council' : mode],
          met,
        };
        rows.push([
          mode,
          ok.length,
          stageJobs,
          layers,
          summary(
            ok.map((r) => r.elapsedMs),
            0,
          ).p50,
          `${total.p50} / ${total.p95}`,
          `**${stat.p50}** / **${stat.p95}**`,
          `${met ? 'met' : 'not met'}${mode === FOLLOW_UP ? ' (for comparison)' : ''}`,
        ]);
        splitRows.push([
          mode,
          split.firstPickupMs,
          split.inJobsMs,
          split.betweenJobsMs,
          split.afterLastJobMs,
          round(
            percentile(
              ok.map((r) => r.modelMs - r.layers * LATENCY_MS),
              50,
            ),
          ),
          round(
            percentile(
              ok.map((r) => r.pgElapsedMs),
              50,
            ) -
              percentile(
                ok.map((r) => r.elapsedMs),
                50,
              ),
          ),
          mode === FOLLOW_UP
            ? '(with council)'
            : `${dbPerMode[mode]?.commitsPerDeliberation ?? '?'} / ${dbPerMode[mode]?.statementsPerDeliberation ?? '?'}`,
        ]);
      }
      // The same target with a following client that asked for deltas, beside the plain figure.
      const deltaRows: (string | number)[][] = [];
      const withDeltas: Record<string, unknown> = {};
      const deltaChecks: Check[] = [];
      for (const mode of modes) {
        const plain = results.filter((r) => r.mode === mode && !r.deltas && r.terminal === 'complete');
        const ok = results.filter((r) => r.mode === mode && r.deltas && r.terminal === 'complete');
        const stat = summary(ok.map((r) => r.perStageMs));
        const plainStat = summary(plain.map((r) => r.perStageMs));
        const met = ok.length > 0 && stat.p50 <= PER_STAGE_P50_MS && stat.p95 <= PER_STAGE_P95_MS;
        const live = ok.map((r) => r.live).filter((l) => l !== null);
        const sum = (pick: (l: LiveSummary) => number) => live.reduce((n, l) => n + pick(l), 0);
        const liveTotals = {
          calls: sum((l) => l.calls),
          complete: sum((l) => l.complete),
          incomplete: sum((l) => l.incomplete),
          mismatched: sum((l) => l.mismatched),
          partials: sum((l) => l.partials),
          examples: live.flatMap((l) => l.examples).slice(0, 5),
        };
        const deltasPer = summary(
          live.map((l) => l.deltas),
          0,
        );
        deltaChecks.push({
          what: `${mode} with deltas on: overhead per stage p50 / p95`,
          target: `≤ ${PER_STAGE_P50_MS} / ≤ ${PER_STAGE_P95_MS} ms`,
          value: `${stat.p50} / ${stat.p95} ms (without: ${plainStat.p50} / ${plainStat.p95} ms)`,
          met,
        });
        withDeltas[mode] = {
          runs: ok.length,
          failedRuns: results.filter((r) => r.mode === mode && r.deltas).length - ok.length,
          elapsedMs: summary(ok.map((r) => r.elapsedMs)),
          overheadMs: summary(ok.map((r) => r.overheadMs)),
          overheadPerStageMs: stat,
          deltasPerDeliberation: deltasPer,
          liveText: liveTotals,
          met,
        };
        deltaRows.push([
          mode,
          `${plain.length} / ${ok.length}`,
          `${plainStat.p50} / ${plainStat.p95}`,
          `**${stat.p50}** / **${stat.p95}**`,
          deltasPer.p50,
          `${liveTotals.complete} of ${liveTotals.calls}` +
            (liveTotals.incomplete + liveTotals.mismatched > 0
              ? ` (${liveTotals.incomplete} incomplete, ${liveTotals.mismatched} mismatched)`
              : ''),
          met ? 'met' : 'not met',
        ]);
      }
      checks.push(...deltaChecks);

      const limits: string[] = [];
      if (deltaChecks.some((c) => !c.met) && checks.every((c) => c.met || deltaChecks.includes(c))) {
        limits.push(
          `Only the runs with deltas miss the target. What they add: the gateway's watch on the control ` +
            `channel and the worker's answer with the text so far, then one Redis PUBLISH of coalesced deltas ` +
            `per deliberation every ${DELTA_INTERVAL_MS} ms while its calls run, which the gateway stitches and ` +
            `forwards. With deltas: ${deltaChecks.map((c) => `${c.what.split(':')[0]} ${c.value}`).join('; ')}.`,
        );
      }
      if (checks.some((c) => !c.met && !deltaChecks.includes(c))) {
        const council = perMode.council as {
          medianSplitMs: { inJobsMs: number };
          overheadMs: { p50: number };
        };
        const followUp = perMode[FOLLOW_UP] as { overheadMs: { p50: number } } | undefined;
        const db = dbPerMode.council ?? {};
        // Every deliberation of the scenario (warm-ups and follow-ups too) and its stage jobs.
        const stageJobsRun = jobs.filter((j) => j.name === 'run-stage').length;
        const workerCpuPerStage = round(
          ((cpu.processes['worker 1']?.cpuS ?? 0) * 1000) / Math.max(1, stageJobsRun),
        );
        const postgresCpuPerStage = round(
          ((cpu.processes['postgres (all backends)']?.cpuS ?? 0) * 1000) / Math.max(1, stageJobsRun),
        );
        const cpuPerStage =
          `over this scenario the worker used ${workerCpuPerStage} ms of CPU per stage job and PostgreSQL ` +
          `${postgresCpuPerStage} ms`;
        limits.push(
          `The time is spent inside the stage jobs (council: ${council.medianSplitMs.inJobsMs} ms in jobs beyond ` +
            `the model latency at the median, for ${council.overheadMs.p50} ms of overhead in all — the first job ` +
            `starts a few ms before the client has read its 202, so the parts of the split do not add up ` +
            `exactly). The queue hop between stages is ~0 (BullMQ starts the next stage within a millisecond or ` +
            `two; negative gaps mean it started before the previous job was marked finished) and delivery to the ` +
            `client after the last job takes a few ms.`,
          `Inside a stage, on its critical path: one query loads the message with its rows and outcomes; the ` +
            `model calls, which start while one call of conclave_stage_write (a PL/pgSQL function: one round ` +
            `trip, one commit) opens the stage with its start and 'started' events beside them; one more call ` +
            `stores the calls' outcomes, the stage rows and events and moves the message; then a BullMQ add ` +
            `for the next stage. A council ` +
            `deliberation costs ${db.commitsPerDeliberation ?? '?'} commits and ` +
            `${db.statementsPerDeliberation ?? '?'} statements (pg_stat_database / pg_stat_statements; the ` +
            `client's reads included).`,
          `Yardstick on this machine (same database, TypeORM as the product uses it): one statement round trip ` +
            `${yardstick.statementMs} ms, one 4-statement transaction with its commit (WAL flush, fsync on) ` +
            `${yardstick.transactionMs} ms. Two round trips to PostgreSQL, one WAL flush and one Redis add lie on a stage's critical path; ` +
            `the rest is CPU: ${cpuPerStage}, most of it on the critical path of a deliberation that runs alone` +
            (profile
              ? ` (profile above: native code — socket writes and other system calls — ` +
                `${profile.byCategory.find((c) => c.category.startsWith('native'))?.pct ?? '?'}% of the ` +
                `worker's busy time, the product's own libs/deliberation ` +
                `${profile.byCategory.find((c) => c.category === 'libs/deliberation')?.pct ?? '?'}%, BullMQ and ` +
                `ioredis ${round((profile.byCategory.find((c) => c.category === 'npm: bullmq')?.pct ?? 0) + (profile.byCategory.find((c) => c.category === 'npm: ioredis')?.pct ?? 0))}%).`
              : '.'),
          ...(followUp
            ? [
                `Titles cost the critical path nothing: the title call runs beside stage 1's calls, in its job, ` +
                  `and is stored with them. Council overhead at the median: ` +
                  `${council.overheadMs.p50} ms as a new conversation, ${followUp.overheadMs.p50} ms as a ` +
                  `follow-up without a title.`,
              ]
            : []),
          `CPU over the scenario: ${describeCpu(cpu)}. Busy time of other processes on this shared machine ` +
            `delays every wake-up of the worker and of PostgreSQL.`,
          `What would move it: the next stage's load skipped when the same worker runs it (it knows what it ` +
            `just wrote, but must still prove nobody else wrote since); fewer Redis round trips per job (BullMQ's own scripts to take, extend and finish a job, and the add ` +
            `of the next stage); asynchronous commit (refused: a crash of PostgreSQL could then reuse a seq a ` +
            `client has already seen); and an idle machine — busy time of other processes delays ` +
            `every wake-up on a 2-core machine. The simulated models' own timer lateness (a few ms per ` +
            `deliberation, in the split above) counts as overhead here too.`,
        );
      }
      return {
        name: 'overhead',
        title: this.title,
        target: this.target,
        parameters: {
          latencyMs: LATENCY_MS,
          jitter: 0,
          runsPerMode: runs,
          warmupRunsPerMode: warmup,
          runsWithDeltasPerMode: Math.ceil(runs / deltasEvery),
          workers: 1,
          workerConcurrency: 16,
          gateways: 1,
          titles:
            'generated (new conversations; the title call runs beside stage 1, in its job, off the critical path)',
        },
        figures: { perMode, withDeltas, yardstick, runs: results },
        checks,
        tables: [
          {
            table: {
              columns: [
                'mode',
                'runs',
                'stage jobs',
                'model-call layers',
                '202 → complete p50 (ms)',
                'overhead p50 / p95 (ms)',
                'per stage p50 / p95 (ms)',
                'target',
              ],
              rows,
            },
          },
          {
            caption:
              `With deltas on: the same requests, every ${deltasEvery === 1 ? '' : `${deltasEvery}rd `}run followed by a ` +
              'client that subscribed with `deltas: true` (runs interleaved with the plain ones above, same stack). ' +
              'Live text: per call, `model_partial` + `model_delta`s stitched at their offsets = the stored answer.',
            table: {
              columns: [
                'mode',
                'runs without / with deltas',
                'per stage p50 / p95 without deltas (ms)',
                'per stage p50 / p95 with deltas (ms)',
                'deltas per deliberation p50',
                'live text complete (calls)',
                'target',
              ],
              rows: deltaRows,
            },
          },
          {
            caption:
              'Where the overhead goes (medians, ms; from the BullMQ timestamps of each stage job): 202 → first job ' +
              'starts, time in jobs beyond the model latency, gaps between one job finishing and the next starting, ' +
              'last job finished → `complete` at the client; then the model calls’ own lateness (timer delay in the ' +
              'worker) and PostgreSQL’s completed_at − created_at minus the client’s figure.',
            table: {
              columns: [
                'mode',
                'first pickup',
                'in jobs',
                'between jobs',
                'after last job',
                'model timer lateness',
                'PG − client',
                'PG commits / statements per deliberation',
              ],
              rows: splitRows,
            },
          },
          ...(profile
            ? profileTables(
                profile,
                "over every mode's runs (the idle rest is waiting for the simulated models)",
              )
            : []),
        ],
        method: [
          `Each mode runs ${runs} times one deliberation at a time (after ${warmup} warm-up runs), latency ${LATENCY_MS} ms without jitter, one worker (concurrency 16), one gateway.`,
          'A Socket.IO client subscribes right after the HTTP 202; elapsed = 202 received → `complete` received.',
          `Critical path = model-call layers × ${LATENCY_MS} ms, the layers being the distinct stages with rows in \`model_calls\` for the message (the title call excluded: it runs beside stage 1). Overhead = elapsed − critical path.`,
          'Per stage = overhead ÷ the number of stage jobs the message went through (BullMQ completed jobs `<messageId>__<stage>`; jury has a `present` stage without model calls).',
          'Cross-check: PostgreSQL `messages.completed_at − created_at`.',
          `With deltas: before ${deltasEvery === 1 ? 'every plain run' : `every ${deltasEvery}rd plain run`} (and in the first warm-up) the same request is followed by a second client that subscribes with \`deltas: true\` (default SIM_STREAM_PIECES: each answer streamed in 20 pieces over the ${LATENCY_MS} ms); its overhead is computed the same way and checked against the same target. The main table and the split above hold the plain runs only.`,
        ],
        limits,
        evidence: {
          cpu: { all: cpu },
          peakRssMb: { all: peakRssMb },
          ...(profile ? { workerProfile: profile } : {}),
        },
      };
    } finally {
      await stack.stop();
    }
  },
};

export function describeCpu(cpu: ReturnType<typeof ProcSampler.report>): string {
  const parts = Object.entries(cpu.processes)
    .sort((a, b) => b[1].pctOfCore - a[1].pctOfCore)
    .map(([label, v]) => `${label} ${v.pctOfCore}%`);
  return `${parts.join(', ')}, other processes on the machine ${cpu.otherPctOfCore}% (of one core; ${cpu.cores} cores, machine ${cpu.machineBusyPct}% busy over ${cpu.seconds} s)`;
}

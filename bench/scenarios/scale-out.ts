import { cpus } from 'node:os';
import { completionOf, juryItems, submitBatch } from '../lib/batch';
import { now, watchBatch } from '../lib/client';
import { ProcSampler, type CpuReport } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { round } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LATENCY_MS = 500;
const PER_WORKER = 50;
const TARGET_RATIO = 1.8;
const BATCHES = 3;
const BATCH_CONCURRENCY = 100;

interface Step {
  workers: number;
  items: number;
  clientRatePerS: number;
  pgRatePerS: number;
  seconds: number;
  /** The most items a fully used set of worker slots could finish per second (slots ÷ item time). */
  slotBoundPerS: number;
  cpuMsPerDeliberation: number;
  /** What the machine's cores allow at that CPU cost per deliberation. */
  cpuCeilingPerS: number;
  /** Share of the worker slots busy with a job over the step (BullMQ processedOn → finishedOn). */
  slotUsePct: number;
  /** Median time a stage job with model calls held its slot (BullMQ processedOn → finishedOn). */
  callJobMs: number;
}

/** How busy the worker slots were between `from` and `to` (epoch ms), from BullMQ's job timestamps. */
async function slotUse(
  stack: BenchStack,
  from: number,
  to: number,
  slots: number,
): Promise<{ slotUsePct: number; callJobMs: number }> {
  const jobs = (await stack.completedJobs()).filter((j) => (j.processedOn ?? 0) >= from && j.finishedOn);
  let busyMs = 0;
  for (const job of jobs) busyMs += Math.min(job.finishedOn ?? 0, to) - (job.processedOn ?? 0);
  const callJobs = jobs
    .filter((j) => !String(j.id).endsWith('__present'))
    .map((j) => (j.finishedOn ?? 0) - (j.processedOn ?? 0))
    .sort((a, b) => a - b);
  return {
    slotUsePct: round((100 * busyMs) / (slots * Math.max(1, to - from))),
    callJobMs: callJobs[Math.floor(callJobs.length / 2)] ?? 0,
  };
}

export const scaleOut: Scenario = {
  name: 'scale-out',
  title: 'Scale-out across worker processes',
  target: `throughput ×${TARGET_RATIO} or better per doubling of worker processes (concurrency ${PER_WORKER} each)`,
  async run(ctx) {
    const steps = ctx.quick ? [1, 2] : [1, 2, 4];
    const itemsPerStep = ctx.quick ? 90 : 600;
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: String(PER_WORKER),
    }).init();
    const cpu: Record<string, CpuReport> = {};
    const rss: Record<string, Record<string, number>> = {};
    const results: Step[] = [];
    try {
      await stack.spawnGateway();
      const socket = (await stack.follower()).socket;
      for (const workers of steps) {
        await Promise.all(Array.from({ length: workers - stack.workers.length }, () => stack.spawnWorker()));
        // A short warm-up for the new processes.
        const warm = await submitBatch(
          stack.baseUrl,
          juryItems(workers * (ctx.quick ? 5 : 10), `warm-${workers}`),
          {
            concurrency: BATCH_CONCURRENCY,
            name: 'warm-up',
          },
        );
        await watchBatch(socket, warm.batchId, 120_000);

        const from = ctx.sampler.cpu();
        ctx.sampler.resetPeaks();
        const t0 = now();
        const startedAt = Date.now();
        const per = Math.ceil(itemsPerStep / BATCHES);
        const batches = [];
        for (let b = 0; b < BATCHES; b++) {
          batches.push(
            await submitBatch(stack.baseUrl, juryItems(per, `scale-${workers}-${b}`), {
              concurrency: BATCH_CONCURRENCY,
              name: `scale-out ${workers}`,
            }),
          );
        }
        const watched = await Promise.all(batches.map((b) => watchBatch(socket, b.batchId, 300_000)));
        const end = Math.max(...watched.map((w) => w.completeAt));
        const label = `${workers} worker${workers > 1 ? 's' : ''}`;
        cpu[label] = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
        rss[label] = ctx.sampler.peakRss();
        const done = await completionOf(
          stack.db,
          batches.map((b) => b.batchId),
        );
        const ended = (done.statuses.complete ?? 0) + (done.statuses.failed ?? 0);
        if (ended !== per * BATCHES)
          throw new HarnessError(`scale-out ${workers}: ${ended} of ${per * BATCHES} items ended`);
        const seconds = (end - t0) / 1000;
        const perUnit = ProcSampler.perUnit(cpu[label], ended);
        const slots = await slotUse(stack, startedAt, startedAt + seconds * 1000, workers * PER_WORKER);
        results.push({
          workers,
          items: ended,
          clientRatePerS: round(ended / seconds),
          pgRatePerS: done.pgRatePerS,
          seconds: round(seconds),
          // a jury item holds a slot for two model layers (the present stage is instant)
          slotBoundPerS: round((workers * PER_WORKER) / ((2 * LATENCY_MS) / 1000)),
          cpuMsPerDeliberation: perUnit.totalMs,
          cpuCeilingPerS: perUnit.ceilingPerS,
          ...slots,
        });
        ctx.log(`  scale-out: ${label}: ${ended} items in ${seconds.toFixed(1)} s`);
      }
    } finally {
      await stack.stop();
    }
    const checks: Check[] = [];
    const ratios: Record<string, number> = {};
    for (let i = 1; i < results.length; i++) {
      const a = results[i - 1];
      const b = results[i];
      const ratio = round(b.clientRatePerS / a.clientRatePerS, 2);
      ratios[`${a.workers}→${b.workers}`] = ratio;
      checks.push({
        what: `${a.workers} → ${b.workers} workers: throughput ratio`,
        target: `≥ ×${TARGET_RATIO}`,
        value: `×${ratio} (${a.clientRatePerS}/s → ${b.clientRatePerS}/s)`,
        met: ratio >= TARGET_RATIO,
      });
    }
    const limits: string[] = [];
    const unmet = checks.filter((c) => !c.met);
    if (unmet.length > 0) {
      const first = results[0];
      const last = results[results.length - 1];
      const label = `${last.workers} workers`;
      const firstLabel = `${first.workers} worker${first.workers > 1 ? 's' : ''}`;
      const firstBusy = cpu[firstLabel]?.machineBusyPct ?? 0;
      limits.push(
        `The machine, not the design. One worker with ${PER_WORKER} slots could finish at most ` +
          `${first.slotBoundPerS} jury items/s at ${LATENCY_MS} ms per call; it reached ${first.clientRatePerS}/s. ` +
          (first.slotUsePct >= 85
            ? `Its slots were the limit (${first.slotUsePct}% busy, the machine ${firstBusy}%): a stage job with ` +
              `calls held its slot ${first.callJobMs} ms at the median, ${LATENCY_MS} ms of model latency and ` +
              `${Math.max(0, first.callJobMs - LATENCY_MS)} ms of its own work (load, writes, the queue's scripts) ` +
              `waiting its turn among ${PER_WORKER} concurrent jobs on one event loop and a shared PostgreSQL, ` +
              `and the present stage takes a slot too. `
            : `Its slots were ${first.slotUsePct}% busy and the machine ${firstBusy}%. `) +
          `Each item costs ≈ ${first.cpuMsPerDeliberation} ms of CPU across worker, PostgreSQL, Redis and ` +
          `gateway, which caps ${cpus().length} cores at ≈ ${first.cpuCeilingPerS}/s, so from two workers on ` +
          `the cores are the limit and added workers can only share them: ` +
          results.map((r) => `${r.workers} → ${r.clientRatePerS}/s`).join(', ') +
          `. At ${last.workers} workers: ${describeCpu(cpu[label])}.`,
        `Workers share nothing but PostgreSQL and Redis (no coordination between them on the hot path), so ` +
          `where each worker gets its own core and PostgreSQL has headroom, throughput follows the slot bound ` +
          `(×2 per doubling). What would move it here: less CPU per deliberation (see throughput) or more cores.`,
      );
    }
    return {
      name: 'scale-out',
      title: this.title,
      target: this.target,
      parameters: {
        steps,
        itemsPerStep,
        batches: BATCHES,
        batchConcurrency: BATCH_CONCURRENCY,
        mode: 'jury (3 jurors + foreman)',
        titles: false,
        latencyMs: LATENCY_MS,
        workerConcurrency: PER_WORKER,
        gateways: 1,
      },
      figures: { steps: results, ratios },
      checks,
      tables: [
        {
          table: {
            columns: [
              'worker processes',
              'items',
              'time',
              'deliberations/s',
              'PG: created → last completed (/s)',
              'slot bound (/s)',
              'CPU ms / deliberation',
              'CPU ceiling (/s)',
              'slots busy',
              'stage job with calls, p50',
              'ratio to previous',
            ],
            rows: results.map((r, i) => [
              r.workers,
              r.items,
              `${r.seconds} s`,
              `**${r.clientRatePerS}**`,
              r.pgRatePerS,
              r.slotBoundPerS,
              r.cpuMsPerDeliberation,
              r.cpuCeilingPerS,
              `${r.slotUsePct}%`,
              `${r.callJobMs} ms`,
              i === 0 ? '' : `×${ratios[`${results[i - 1].workers}→${r.workers}`]}`,
            ]),
          },
        },
      ],
      method: [
        `Per step, ${BATCHES} jury batches (no titles, concurrency ${BATCH_CONCURRENCY} each, so up to ${BATCHES * BATCH_CONCURRENCY} items in flight, more than the ${PER_WORKER} slots of each worker) of ${itemsPerStep} items in all, latency ${LATENCY_MS} ms; workers are added between steps (1 → 2 → 4), each with WORKER_CONCURRENCY ${PER_WORKER}.`,
        'Rate = items ÷ (first batch’s HTTP 202 → last `batch_complete` at a Socket.IO client); cross-check from PostgreSQL: items ÷ (first `batches.created_at` → last `messages.completed_at`).',
        `Slot bound = worker slots ÷ the time a jury item holds a slot (2 layers × ${LATENCY_MS} ms): what the workers could do with free CPU. CPU ms / deliberation: user + system time of every process of the stack (/proc) over the step ÷ items; CPU ceiling = cores ÷ that.`,
        'Slots busy = the time stage jobs held a worker slot (BullMQ `processedOn` → `finishedOn`) ÷ (slots × the step); the median of that time for the stages with model calls.',
      ],
      limits,
      evidence: { cpu, peakRssMb: rss },
    };
  },
};

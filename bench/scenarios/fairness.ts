import { cpus } from 'node:os';
import { cancelBatch, juryItems, submitBatch } from '../lib/batch';
import { http, startDeliberation, type Follower } from '../lib/client';
import { ProcSampler, type CpuReport } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { round, sleep, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LATENCY_MS = 200;
const WORKER_CONCURRENCY = 16;
const RATIO = 1.5;
const REQUEST = {
  question: 'Fairness probe: what is the most useful thing to measure in a benchmark?',
  councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'],
  chairmanModel: 'sim/chair',
};

async function probe(stack: BenchStack, follower: Follower, runs: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < runs; i++) {
    const accepted = await startDeliberation(stack.baseUrl, REQUEST);
    const followed = await follower.follow(accepted.messageId, 60_000);
    if (followed.terminal !== 'complete') throw new HarnessError(`probe ended with ${followed.terminal}`);
    latencies.push(followed.terminalAt - accepted.acceptedAt);
    await sleep(100);
  }
  return latencies;
}

export const fairness: Scenario = {
  name: 'fairness',
  title: 'Interactive latency during a batch',
  target: `an interactive council deliberation's latency ≤ ${RATIO} × the same on an idle system`,
  async run(ctx) {
    const runs = ctx.quick ? 2 : 10;
    const items = ctx.quick ? 300 : 2000;
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
    }).init();
    const cpu: Record<string, CpuReport> = {};
    const rss: Record<string, Record<string, number>> = {};
    try {
      await Promise.all([stack.spawnGateway(), stack.spawnWorker()]);
      const follower = await stack.follower();
      await probe(stack, follower, 2); // warm-up

      let from = ctx.sampler.cpu();
      ctx.sampler.resetPeaks();
      const idle = await probe(stack, follower, runs);
      cpu.idle = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
      rss.idle = ctx.sampler.peakRss();

      const batch = await submitBatch(stack.baseUrl, juryItems(items, 'fairness'), {
        concurrency: 100,
        name: 'fairness background',
      });
      // Let the batch fill the worker's slots before probing.
      const fillBy = Date.now() + 30_000;
      for (;;) {
        const view = await http<{ complete: number; running: number }>(
          stack.baseUrl,
          'GET',
          `/api/batches/${batch.batchId}`,
        );
        if (view.body.complete > 0 && view.body.running > 0) break;
        if (Date.now() > fillBy) throw new HarnessError('the background batch did not start');
        await sleep(200);
      }
      from = ctx.sampler.cpu();
      ctx.sampler.resetPeaks();
      const loadedStart = Date.now();
      const loaded = await probe(stack, follower, runs);
      cpu['during batch'] = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
      rss['during batch'] = ctx.sampler.peakRss();
      const loadedSeconds = (Date.now() - loadedStart) / 1000;
      const view = await http<{ status: string; complete: number; running: number; queued: number }>(
        stack.baseUrl,
        'GET',
        `/api/batches/${batch.batchId}`,
      );
      const batchStillRunning = view.body.status === 'running';
      await cancelBatch(stack.baseUrl, batch.batchId);
      const [{ ended }]: { ended: number }[] = await stack.db.query(
        `SELECT count(*)::int AS ended FROM messages WHERE batch_id = $1 AND role = 'assistant'
           AND completed_at BETWEEN to_timestamp($2::float / 1000) AND to_timestamp($3::float / 1000)`,
        [batch.batchId, loadedStart, loadedStart + loadedSeconds * 1000],
      );

      const idleStat = summary(idle, 0);
      const loadedStat = summary(loaded, 0);
      const ratio = round(loadedStat.p50 / idleStat.p50, 2);
      const ratioMax = round(loadedStat.max / idleStat.max, 2);
      const checks: Check[] = [
        {
          what: 'median latency during the batch ÷ idle',
          target: `≤ ×${RATIO}`,
          value: `×${ratio} (${loadedStat.p50} ms vs ${idleStat.p50} ms)`,
          met: ratio <= RATIO && batchStillRunning,
        },
      ];
      const limits: string[] = [];
      if (!checks[0].met) {
        limits.push(
          batchStillRunning
            ? `The interactive jobs jump the queue (batch items are prioritized lower), but they still wait ` +
                `for one of the worker's ${WORKER_CONCURRENCY} slots and share the CPU with the batch: ` +
                `${describeCpu(cpu['during batch'])}.`
            : 'The batch finished before the probes did: make it larger.',
          'What would move it: a few worker slots reserved for interactive jobs (a second BullMQ worker ' +
            'in the same process on an interactive-only queue), or a lower batch concurrency per worker.',
        );
      }
      const notes = [
        `The tail is wider than the median: p95 ×${round(loadedStat.p95 / idleStat.p95, 2)} (${loadedStat.p95} ms ` +
          `vs ${idleStat.p95} ms). Interactive stage jobs go ahead of batch items in the queue, but a stage ` +
          `still waits for one of the ${WORKER_CONCURRENCY} slots to free and shares the CPU with the batch ` +
          `(${describeCpu(cpu['during batch'])}); the batch ended ${round(ended / loadedSeconds)} items/s meanwhile.`,
      ];
      return {
        name: 'fairness',
        title: this.title,
        target: this.target,
        parameters: {
          probeRuns: runs,
          probe: 'council, 3 models + chairman, new conversation (with title)',
          backgroundBatch: `${items} jury items, concurrency 100, no titles`,
          latencyMs: LATENCY_MS,
          workers: 1,
          workerConcurrency: WORKER_CONCURRENCY,
        },
        figures: {
          idleMs: idleStat,
          duringBatchMs: loadedStat,
          ratioP50: ratio,
          ratioMax,
          batchStillRunning,
          batchItemsEndedDuringProbes: ended,
          batchRateDuringProbesPerS: round(ended / loadedSeconds),
          idleRunsMs: idle.map((v) => round(v)),
          duringBatchRunsMs: loaded.map((v) => round(v)),
        },
        checks,
        tables: [
          {
            table: {
              columns: ['', 'runs', 'p50 (ms)', 'p95 (ms)', 'max (ms)'],
              rows: [
                ['idle', idleStat.n, idleStat.p50, idleStat.p95, idleStat.max],
                ['during the batch', loadedStat.n, `**${loadedStat.p50}**`, loadedStat.p95, loadedStat.max],
                ['ratio', '', `**×${ratio}**`, `×${round(loadedStat.p95 / idleStat.p95, 2)}`, `×${ratioMax}`],
              ],
            },
          },
        ],
        method: [
          `The same council request (3 models + chairman, latency ${LATENCY_MS} ms, a new conversation each time, so with its title call) runs ${runs} times one after another on an idle stack, then ${runs} times while a ${items}-item jury batch (concurrency 100) keeps the worker's ${WORKER_CONCURRENCY} slots busy; the batch is cancelled afterwards.`,
          'Latency = HTTP 202 → `complete` at a Socket.IO client. The target compares medians; p95 and max are shown too.',
        ],
        limits,
        notes,
        evidence: { cpu, peakRssMb: rss },
      };
    } finally {
      await stack.stop();
    }
  },
};

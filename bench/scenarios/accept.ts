import { cpus } from 'node:os';
import { cancelBatch, juryItems, JURY_DEFAULTS } from '../lib/batch';
import { http } from '../lib/client';
import { ProcSampler, type CpuReport } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { round, sleep, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LIMIT_MS = 3000;

export const accept: Scenario = {
  name: 'accept',
  title: 'Accepting a large batch',
  target: `a 10 000-item batch is answered (HTTP 202) in ≤ ${LIMIT_MS / 1000} s`,
  async run(ctx) {
    const items = ctx.quick ? 1000 : 10_000;
    const trials = ctx.quick ? 2 : 3;
    const stack = await new BenchStack(ctx, { SIM_LATENCY_MS: '0', WORKER_CONCURRENCY: '16' }).init();
    const cpu: Record<string, CpuReport> = {};
    try {
      await stack.spawnGateway();
      // No worker: the answer is what is measured; the first items wait in the queue, and each
      // batch is cancelled after.
      const warm = await http<{ batchId: string }>(stack.baseUrl, 'POST', '/api/batches', {
        defaults: JURY_DEFAULTS,
        items: juryItems(200, 'warm-up'),
      });
      if (warm.status !== 202) throw new HarnessError(`warm-up batch: ${warm.status}`);
      await cancelBatch(stack.baseUrl, warm.body.batchId);

      const times: number[] = [];
      const bodyBytes: number[] = [];
      const stored: number[] = [];
      for (let t = 0; t < trials; t++) {
        const body = { name: `accept ${t}`, defaults: JURY_DEFAULTS, items: juryItems(items, `accept-${t}`) };
        bodyBytes.push(Buffer.byteLength(JSON.stringify(body)));
        const from = ctx.sampler.cpu();
        const answer = await http<{ batchId: string; total: number }>(
          stack.baseUrl,
          'POST',
          '/api/batches',
          body,
        );
        cpu[`trial ${t + 1}`] = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
        if (answer.status !== 202 || answer.body.total !== items) {
          throw new HarnessError(
            `batch of ${items}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
          );
        }
        times.push(answer.ms);
        const [{ n }]: { n: number }[] = await stack.db.query(
          `SELECT count(*)::int AS n FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
          [answer.body.batchId],
        );
        stored.push(n);
        await cancelBatch(stack.baseUrl, answer.body.batchId);
        ctx.log(`  accept: ${items} items answered in ${round(answer.ms, 0)} ms`);
        await sleep(500);
      }
      const stat = summary(times, 0);
      const checks: Check[] = [
        {
          what: `${items}-item batch: slowest of ${trials} answers`,
          target: `≤ ${LIMIT_MS} ms`,
          value: `${stat.max} ms (median ${stat.p50} ms)`,
          met: stat.max <= LIMIT_MS && stored.every((n) => n === items),
        },
      ];
      const limits: string[] = [];
      if (!checks[0].met) {
        limits.push(
          `The gateway validates every item one after another (class-validator per item) before one ` +
            `transaction stores them; CPU of the last trial: ${describeCpu(cpu[`trial ${trials}`])}.`,
          'What would move it: validate items with a compiled schema (or in a worker thread), and store with COPY.',
        );
      }
      return {
        name: 'accept',
        title: this.title,
        target: this.target,
        parameters: { items, trials, mode: 'jury items with defaults', gateways: 1, workers: 0 },
        figures: {
          answerMs: stat,
          trialsMs: times.map((t) => round(t, 0)),
          bodyMb: round(bodyBytes[0] / 1024 / 1024, 2),
          itemsStored: stored,
        },
        checks,
        tables: [
          {
            table: {
              columns: ['items', 'body', 'trials (ms)', 'median (ms)', 'slowest (ms)', 'rows stored'],
              rows: [
                [
                  items,
                  `${round(bodyBytes[0] / 1024 / 1024, 2)} MB`,
                  times.map((t) => round(t, 0)).join(', '),
                  stat.p50,
                  `**${stat.max}**`,
                  stored.join(', '),
                ],
              ],
            },
          },
        ],
        method: [
          `${trials} batches of ${items} jury items (after a 200-item warm-up) are posted as JSON to one gateway process; the figure is the client's time from sending the request to reading the 202.`,
          'PostgreSQL is then asked how many assistant messages the batch stored (must equal the item count); each batch is cancelled afterwards. No worker runs: the answer does not wait for any item.',
        ],
        limits,
        evidence: { cpu },
      };
    } finally {
      await stack.stop();
    }
  },
};

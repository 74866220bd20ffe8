import { cpus } from 'node:os';
import type { DataSource } from 'typeorm';
import { now, startDeliberation } from '../lib/client';
import { ProcSampler } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { percentile, round, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LATENCY_MS = 200;
const OVERHEAD_P50_MS = 5;
const FIRST_CHUNK_MS = 50;

const question = (run: number) =>
  `Benchmark question ${run}: how many bridges does a city of a million people need?`;

/** One client's run: when it sent the request and when it had the answer (epoch ms, the machine's clock). */
interface Timed {
  sentAt: number;
  doneAt: number;
  /** Streaming: when the first `data:` chunk was read. */
  firstChunkAt: number | null;
  messageId: string;
}

/** POST /v1/chat/completions without `stream`, as a client sees it. */
async function completion(baseUrl: string, run: number): Promise<Timed> {
  const sentAt = now();
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
    body: JSON.stringify({ model: 'conclave/council', messages: [{ role: 'user', content: question(run) }] }),
  });
  const body = (await response.json()) as {
    choices?: { finish_reason?: string; message?: { content?: string } }[];
    conclave?: { messageId: string };
  };
  const doneAt = now();
  if (response.status !== 200 || body.choices?.[0]?.finish_reason !== 'stop' || !body.conclave) {
    throw new HarnessError(`/v1/chat/completions: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  return { sentAt, doneAt, firstChunkAt: null, messageId: body.conclave.messageId };
}

/** The same with `stream: true`: when the first chunk arrived and when `[DONE]` did. */
async function streamed(baseUrl: string, run: number): Promise<Timed> {
  const sentAt = now();
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
    body: JSON.stringify({
      model: 'conclave/council',
      messages: [{ role: 'user', content: question(run) }],
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (response.status !== 200 || !response.body) {
    throw new HarnessError(`/v1/chat/completions (stream): ${response.status} ${await response.text()}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let firstChunkAt: number | null = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (firstChunkAt === null && text.includes('data: ')) firstChunkAt = now();
    if (text.includes('data: [DONE]')) break;
  }
  const doneAt = now();
  if (!text.includes('"finish_reason":"stop"') || !text.includes('data: [DONE]')) {
    throw new HarnessError(`/v1 stream did not finish: …${text.slice(-300)}`);
  }
  const messageId = /"id":"chatcmpl-([0-9a-f-]{36})"/.exec(text)?.[1] ?? '';
  return { sentAt, doneAt, firstChunkAt, messageId };
}

/**
 * When PostgreSQL stored the deliberation (its turn's transaction) and its `complete` event
 * (clock_timestamp()), epoch ms: what lies between is the worker's, the same for every client.
 */
async function storedAt(
  db: DataSource,
  messageId: string,
): Promise<{ createdAt: number; completeAt: number }> {
  const [row]: { created: number; complete: number | null }[] = await db.query(
    `SELECT extract(epoch FROM m.created_at) * 1000 AS created,
       (SELECT extract(epoch FROM e.created_at) * 1000 FROM deliberation_events e
        WHERE e.message_id = m.id AND e.type = 'complete') AS complete
     FROM messages m WHERE m.id = $1`,
    [messageId],
  );
  if (!row || row.complete === null)
    throw new HarnessError(`deliberation ${messageId} has no complete event`);
  return { createdAt: Number(row.created), completeAt: Number(row.complete) };
}

/** A client's time outside the worker: request sent → turn stored (head), `complete` stored → answer read (tail). */
async function outside(db: DataSource, run: Timed): Promise<{ head: number; tail: number }> {
  const { createdAt, completeAt } = await storedAt(db, run.messageId);
  return { head: createdAt - run.sentAt, tail: run.doneAt - completeAt };
}

export const openaiCompatible: Scenario = {
  name: 'openai-compatible',
  title: 'OpenAI-compatible endpoint (/v1/chat/completions) against the native API',
  target: `a council through /v1 adds ≤ ${OVERHEAD_P50_MS} ms p50 over the native API; the first streamed chunk within ${FIRST_CHUNK_MS} ms`,
  async run(ctx) {
    const runs = ctx.quick ? 4 : 60;
    const warmup = ctx.quick ? 1 : 3;
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: '16',
    }).init();
    try {
      await Promise.all([stack.spawnGateway(), stack.spawnWorker()]);
      const follower = await stack.follower();
      const runsOf = { native: [] as Timed[], plain: [] as Timed[], stream: [] as Timed[] };
      const splitOf = {
        native: [] as { head: number; tail: number }[],
        plain: [] as { head: number; tail: number }[],
        stream: [] as { head: number; tail: number }[],
      };
      const cpuFrom = ctx.sampler.cpu();
      // One deliberation at a time, the three clients taking turns, so they share the machine's state.
      const nativeRun = async (i: number): Promise<Timed> => {
        const sentAt = now();
        const start = await startDeliberation(stack.baseUrl, { question: question(i) });
        const followed = await follower.follow(start.messageId, 60_000);
        if (followed.terminal !== 'complete') throw new HarnessError(`native run ${i}: ${followed.terminal}`);
        return { sentAt, doneAt: followed.terminalAt, firstChunkAt: null, messageId: start.messageId };
      };
      const clients = {
        native: nativeRun,
        plain: (i: number) => completion(stack.baseUrl, i),
        stream: (i: number) => streamed(stack.baseUrl, i),
      };
      const kinds = ['native', 'plain', 'stream'] as const;
      for (let i = 0; i < warmup + runs; i++) {
        // The order rotates from run to run: each client comes first (right after an idle
        // moment) and right after another's deliberation equally often.
        for (let k = 0; k < kinds.length; k++) {
          const kind = kinds[(i + k) % kinds.length];
          const run = await clients[kind](i);
          if (i < warmup) continue;
          runsOf[kind].push(run);
          splitOf[kind].push(await outside(stack.db, run));
        }
      }
      const elapsed = (kind: keyof typeof runsOf) => runsOf[kind].map((r) => r.doneAt - r.sentAt);
      const native = elapsed('native');
      const plain = elapsed('plain');
      const stream = elapsed('stream');
      const firstChunk = runsOf.stream.flatMap((r) =>
        r.firstChunkAt === null ? [] : [r.firstChunkAt - r.sentAt],
      );
      const cpu = ProcSampler.report(cpuFrom, ctx.sampler.cpu(), cpus().length);
      const nativeStat = summary(native);
      const plainStat = summary(plain);
      const streamStat = summary(stream);
      const firstStat = summary(firstChunk);
      const sum = (kind: keyof typeof splitOf) => splitOf[kind].map((s) => s.head + s.tail);
      const outsideStat = {
        native: summary(sum('native')),
        plain: summary(sum('plain')),
        stream: summary(sum('stream')),
      };
      const splitStat = (kind: keyof typeof splitOf) => ({
        head: summary(splitOf[kind].map((s) => s.head)),
        tail: summary(splitOf[kind].map((s) => s.tail)),
      });
      const split = { native: splitStat('native'), plain: splitStat('plain'), stream: splitStat('stream') };
      // What /v1 adds: its time outside the worker against the native client's, at the median.
      const added = round(outsideStat.plain.p50 - outsideStat.native.p50);
      const addedStream = round(outsideStat.stream.p50 - outsideStat.native.p50);
      // End to end, for comparison: the deliberation's own duration varies with the machine's load.
      const overhead = round(percentile(plain, 50) - percentile(native, 50));
      const streamOverhead = round(percentile(stream, 50) - percentile(native, 50));
      const checks: Check[] = [
        {
          what: 'council through /v1/chat/completions (no stream): time added over the native API, p50',
          target: `≤ ${OVERHEAD_P50_MS} ms`,
          value: `${added} ms (outside the worker ${outsideStat.plain.p50} vs ${outsideStat.native.p50} ms; end to end ${plainStat.p50} vs ${nativeStat.p50} ms)`,
          met: added <= OVERHEAD_P50_MS,
        },
        {
          what: 'first streamed chunk after the request, p50 / max',
          target: `≤ ${FIRST_CHUNK_MS} ms`,
          value: `${firstStat.p50} / ${firstStat.max} ms`,
          met: firstStat.p50 <= FIRST_CHUNK_MS,
        },
      ];
      const limits: string[] = [];
      if (!checks.every((c) => c.met)) {
        limits.push(
          `After the deliberation's \`complete\` event, a /v1 answer reads the stored deliberation (two round trips ` +
            `to PostgreSQL) and serialises it; the native client's figure stops at the event. CPU over the scenario: ` +
            `${describeCpu(cpu)}.`,
        );
      }
      return {
        name: this.name,
        title: this.title,
        target: this.target,
        parameters: {
          latencyMs: LATENCY_MS,
          runs,
          warmupRuns: warmup,
          mode: 'council, default roster (3 members and a chairman), new conversation each run',
          gateways: 1,
          workers: 1,
        },
        figures: {
          endToEndMs: { native: nativeStat, v1: plainStat, v1Stream: streamStat },
          outsideWorkerMs: outsideStat,
          headAndTailMs: split,
          firstChunkMs: firstStat,
          addedP50Ms: added,
          addedStreamP50Ms: addedStream,
          endToEndDifferenceP50Ms: { v1: overhead, v1Stream: streamOverhead },
        },
        checks,
        tables: [
          {
            table: {
              columns: [
                'client',
                'runs',
                'outside the worker p50 / p95 (ms)',
                'of which request → stored / complete → read, p50 (ms)',
                'added p50 (ms)',
                'end to end p50 / p95 (ms)',
              ],
              rows: [
                [
                  'native: POST /api/deliberations, Socket.IO until `complete`',
                  native.length,
                  `${outsideStat.native.p50} / ${outsideStat.native.p95}`,
                  `${split.native.head.p50} / ${split.native.tail.p50}`,
                  '—',
                  `${nativeStat.p50} / ${nativeStat.p95}`,
                ],
                [
                  'POST /v1/chat/completions, answer read',
                  plain.length,
                  `${outsideStat.plain.p50} / ${outsideStat.plain.p95}`,
                  `${split.plain.head.p50} / ${split.plain.tail.p50}`,
                  `**${added}**`,
                  `${plainStat.p50} / ${plainStat.p95}`,
                ],
                [
                  'POST /v1/chat/completions, stream until `[DONE]`',
                  stream.length,
                  `${outsideStat.stream.p50} / ${outsideStat.stream.p95}`,
                  `${split.stream.head.p50} / ${split.stream.tail.p50}`,
                  addedStream,
                  `${streamStat.p50} / ${streamStat.p95}`,
                ],
              ],
            },
          },
          {
            caption: 'Streaming: the first chunk (the assistant role) after the request was sent.',
            table: {
              columns: ['runs', 'p50 (ms)', 'p95 (ms)', 'max (ms)'],
              rows: [[firstChunk.length, `**${firstStat.p50}**`, firstStat.p95, firstStat.max]],
            },
          },
        ],
        method: [
          `Council with the default roster, latency ${LATENCY_MS} ms without jitter, one gateway and one worker (both compiled unless --runtime ts-node), one deliberation at a time; ${runs} runs of each client after ${warmup} warm-up runs, taking turns in an order that rotates from run to run, each run's three clients on the same question (the same simulated answers).`,
          'Native: POST /api/deliberations, then a Socket.IO client subscribes (from seq 0) and waits for `complete`. /v1: POST /v1/chat/completions with `model: conclave/council` (plain fetch, single-user mode) until the whole answer is read; streaming: `stream: true` with `include_usage` until `data: [DONE]`, first chunk = the first `data:` line read.',
          "Outside the worker = (the turn's row stored in PostgreSQL − request sent) + (answer read − the `complete` event stored), on the machine's one clock: what the gateway and the client add, without the deliberation itself, whose duration varies with the load of a shared machine far more than a few milliseconds. Added = its median for /v1 − its median for the native client. End-to-end figures are beside it.",
          'The native client pays a round trip after the 202 to subscribe (the events so far are replayed from PostgreSQL) and stops at `complete`; /v1 subscribes inside the gateway, then reads the stored deliberation (the message, then its stage rows, usage and calls side by side) to build the answer and its usage.',
        ],
        limits,
        evidence: { cpu: { all: cpu } },
      };
    } finally {
      await stack.stop();
    }
  },
};

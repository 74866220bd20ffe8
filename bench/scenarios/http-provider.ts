import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  RANKING_PROMPT_MARKER,
  SIMULATED_FALLBACK,
  SIMULATED_RESPONDERS,
  SYNTHESIS_PROMPT_MARKER,
} from '@conclave/deliberation';
import { hashString, parseSimModel, seededRandom } from '@conclave/llm';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type ScriptContext,
} from '../../libs/llm/src/testing/chat-completions-server';
import { startDeliberation, type Follower } from '../lib/client';
import { type CpuSnapshot } from '../lib/proc';
import {
  profileTables,
  profilerEnv,
  startProfile,
  stopProfile,
  summarizeProfile,
  type ProfileSummary,
} from '../lib/profile';
import { BenchStack } from '../lib/stack';
import { mapLimit, median, round, sleep, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';

const LATENCY_MS = 200;
/** Content pieces of a streamed answer; the server's pause between two lines spreads them over LATENCY_MS. */
const CHUNKS = 20;
/** Event-stream lines besides the content: the role chunk, the finish chunk, usage, [DONE]. */
const GAP_MS = Math.round(LATENCY_MS / (CHUNKS + 3));
const PER_STAGE_P50_MS = 12;
const STAGES = 3; // council: stage1, stage2, stage3
const SEED = 'bench-http';
const KINDS = ['simulated', 'http'] as const;
type Kind = (typeof KINDS)[number];

function council(kind: Kind, run: number): Record<string, unknown> {
  const prefix = kind === 'http' ? 'local' : 'sim';
  return {
    question: `HTTP benchmark question ${run}: how should a city of a million people plan its bridges?`,
    councilModels: ['athena', 'hermes', 'apollo', 'artemis'].map((m) => `${prefix}/${m}`),
    chairmanModel: `${prefix}/chair`,
  };
}

const lastUser = (messages: unknown[]): string =>
  [...(messages as { role?: string; content?: string }[])].reverse().find((m) => m.role === 'user')
    ?.content ?? '';

/**
 * The model behind the local server answers every prompt as the simulated provider would (the
 * same responders, seeded the same way), streamed in CHUNKS pieces over about LATENCY_MS.
 */
function answer({ request }: ScriptContext): ChatBehaviour {
  const model = `local/${request.model ?? 'unknown'}`;
  const prompt = lastUser(request.messages);
  const responder = SIMULATED_RESPONDERS.find((r) => r.matches(prompt)) ?? SIMULATED_FALLBACK;
  const directives = parseSimModel(model);
  const content = responder.respond({
    model,
    persona: directives.persona,
    flags: directives.flags,
    messages: request.messages as never,
    prompt,
    random: seededRandom(hashString(`${SEED}|${model}|${prompt}`)),
    seed: SEED,
  });
  return {
    kind: 'success',
    content,
    chunks: CHUNKS,
    chunkDelayMs: GAP_MS,
    promptTokens: 100,
    completionTokens: 50,
  };
}

/** A call as the server saw it: which layer of the council, when it arrived and when its answer ended. */
interface ServedCall {
  layer: 'stage1' | 'stage2' | 'stage3' | 'title';
  receivedAt: number;
  endedAt: number;
}

function layerOf(request: RecordedChatRequest): ServedCall['layer'] {
  const prompt = lastUser(request.messages);
  if (prompt.startsWith('Generate a brief title')) return 'title';
  if (prompt.includes(RANKING_PROMPT_MARKER)) return 'stage2';
  if (prompt.includes(SYNTHESIS_PROMPT_MARKER)) return 'stage3';
  return 'stage1';
}

interface Measured {
  kind: Kind;
  elapsedMs: number;
  /** Slowest call of each layer, summed (the models' time on the critical path). */
  modelMs: number;
  overheadMs: number;
  perStageMs: number;
}

/**
 * The path users really run: the models are reached over HTTP through the OpenAI-compatible
 * provider (the worker configured with OPENAI_BASE_URL, as in production), a local chat-completions
 * server answering at a fixed pace, next to the same council on the simulated provider in the
 * same stack. Overhead per stage, CPU per deliberation per process, and TCP connections accepted
 * by the server against the calls made (keep-alive reuse).
 */
export const httpProvider: Scenario = {
  name: 'http-provider',
  title: 'Models over HTTP (OpenAI-compatible provider)',
  target: `p50 ≤ ${PER_STAGE_P50_MS} ms overhead per stage with the models behind a local chat-completions server (${LATENCY_MS} ms a call); connections reused`,
  async run(ctx) {
    const runs = ctx.quick ? 3 : 20;
    const warmup = ctx.quick ? 2 : 10;
    const cpuBatch = ctx.quick ? 20 : 100;
    const served = new Map<RecordedChatRequest, ServedCall>();
    let server: ChatCompletionsServer | null = null;
    server = await startChatCompletionsServer((context) => {
      const call: ServedCall = {
        layer: layerOf(context.request),
        receivedAt: Date.now(),
        endedAt: Number.NaN,
      };
      served.set(context.request, call);
      void context.request.settled.then(() => {
        call.endedAt = Date.now();
      });
      return answer(context);
    });
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      SIM_STREAM_PIECES: String(CHUNKS),
      WORKER_CONCURRENCY: '100',
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: 'bench-key',
    }).init();
    try {
      const profileFile = ctx.profile
        ? path.join(tmpdir(), `conclave-bench-http-worker-${Date.now()}.cpuprofile`)
        : null;
      const [, worker] = await Promise.all([
        stack.spawnGateway(),
        stack.spawnWorker(profileFile ? profilerEnv(profileFile) : {}),
      ]);
      let profile: ProfileSummary | null = null;
      const followers: Follower[] = [];
      for (let i = 0; i < 4; i++) followers.push(await stack.follower());
      let run = 0;
      const one = async (kind: Kind, follower: Follower) => {
        const accepted = await startDeliberation(stack.baseUrl, council(kind, run++));
        const followed = await follower.follow(accepted.messageId, 60_000);
        if (followed.terminal !== 'complete') {
          throw new HarnessError(`${kind} council ${accepted.messageId} ended with ${followed.terminal}`);
        }
        return { accepted, followed };
      };
      for (let i = 0; i < warmup; i++) for (const kind of KINDS) await one(kind, followers[0]);
      await stack.db.query('ANALYZE');

      // Overhead: one deliberation at a time, the two kinds taking turns.
      const measured: Measured[] = [];
      const connectionsBefore = server.connections;
      const callsBefore = server.requests.length;
      for (let i = 0; i < runs; i++) {
        for (const kind of KINDS) {
          const from = server.requests.length;
          const { accepted, followed } = await one(kind, followers[0]);
          const elapsedMs = followed.terminalAt - accepted.acceptedAt;
          let modelMs = STAGES * LATENCY_MS;
          if (kind === 'http') {
            // Wait for the title call's end to be recorded too (it runs beside stage 1).
            await sleep(20);
            const calls = server.requests.slice(from).map((r) => served.get(r));
            modelMs = 0;
            for (const layer of ['stage1', 'stage2', 'stage3'] as const) {
              const inLayer = calls.filter((c): c is ServedCall => c?.layer === layer);
              if (inLayer.length === 0) throw new HarnessError(`no ${layer} call reached the server`);
              modelMs += Math.max(...inLayer.map((c) => c.endedAt - c.receivedAt));
            }
          }
          const overheadMs = elapsedMs - modelMs;
          measured.push({ kind, elapsedMs, modelMs, overheadMs, perStageMs: overheadMs / STAGES });
        }
      }
      const httpCalls = server.requests.length - callsBefore;
      const newConnections = server.connections - connectionsBefore;
      const peakConcurrentCalls = peakOverlap(
        server.requests
          .slice(callsBefore)
          .map((r) => served.get(r))
          .filter((c): c is ServedCall => c !== undefined)
          .map((c) => [c.receivedAt, c.endedAt]),
      );

      // CPU: a batch of each kind with several in flight, the stack's processes measured around it.
      const cpuOf: Record<Kind, { msPerDeliberation: Record<string, number>; totalMs: number }> = {
        simulated: { msPerDeliberation: {}, totalMs: Number.NaN },
        http: { msPerDeliberation: {}, totalMs: Number.NaN },
      };
      const batchConnectionsBefore = server.connections;
      const batchCallsBefore = server.requests.length;
      for (const kind of KINDS) {
        const from: CpuSnapshot = ctx.sampler.cpu();
        await mapLimit(
          Array.from({ length: cpuBatch }, (_, i) => i),
          ctx.quick ? 5 : 20,
          (i) => one(kind, followers[i % followers.length]),
        );
        await sleep(300);
        // From the raw counters (ProcSampler.report rounds to 0.1 s, too coarse for ms per council).
        const to = ctx.sampler.cpu();
        const msPerDeliberation: Record<string, number> = {};
        let total = 0;
        for (const [label, seconds] of Object.entries(to.processes)) {
          const ms = ((seconds - (from.processes[label] ?? 0)) * 1000) / cpuBatch;
          msPerDeliberation[label] = round(ms, 1);
          total += ms;
        }
        cpuOf[kind] = { msPerDeliberation, totalMs: round(total, 1) };
        if (kind === 'http' && profileFile) {
          // One more batch with the profiler on, not counted: sampling costs CPU of its own.
          startProfile(worker.child);
          await mapLimit(
            Array.from({ length: cpuBatch }, (_, i) => i),
            ctx.quick ? 5 : 20,
            (i) => one(kind, followers[i % followers.length]),
          );
          await stopProfile(worker.child, profileFile);
          profile = summarizeProfile(profileFile);
          ctx.log(`  http-provider: worker CPU profile written to ${profileFile}`);
        }
      }
      const batchCalls = server.requests.length - batchCallsBefore;
      const batchConnections = server.connections - batchConnectionsBefore;
      const batchPeak = peakOverlap(
        server.requests
          .slice(batchCallsBefore)
          .map((r) => served.get(r))
          .filter((c): c is ServedCall => c !== undefined)
          .map((c) => [c.receivedAt, c.endedAt]),
      );

      const stat = (kind: Kind) => summary(measured.filter((m) => m.kind === kind).map((m) => m.perStageMs));
      const http = stat('http');
      const simulated = stat('simulated');
      const checks: Check[] = [
        {
          what: 'models over HTTP: overhead per stage p50',
          target: `≤ ${PER_STAGE_P50_MS} ms`,
          value: `${http.p50} ms (p95 ${http.p95} ms; simulated models: ${simulated.p50} / ${simulated.p95} ms)`,
          met: http.p50 <= PER_STAGE_P50_MS,
        },
        {
          what: 'connections reused: new TCP connections the model server accepted / calls it answered',
          target: `no more than the calls in flight at once (${peakConcurrentCalls} one council at a time, ${batchPeak} in the batch)`,
          value: `${newConnections} for ${httpCalls} calls one council at a time; ${batchConnections} for ${batchCalls} calls in the batch`,
          // A pool may open a connection or two more than the calls it runs at once (one closing as
          // another opens); without keep-alive there would be one per call.
          met: newConnections <= peakConcurrentCalls && batchConnections <= Math.ceil(batchPeak * 1.1) + 2,
        },
      ];
      const medianOf = (kind: Kind, pick: (m: Measured) => number) =>
        round(median(measured.filter((m) => m.kind === kind).map(pick)));
      const processes = [...new Set(KINDS.flatMap((k) => Object.keys(cpuOf[k].msPerDeliberation)))];
      return {
        name: 'http-provider',
        title: this.title,
        target: this.target,
        parameters: {
          latencyMs: LATENCY_MS,
          chunksPerAnswer: CHUNKS,
          runsPerKind: runs,
          warmupPerKind: warmup,
          cpuBatchPerKind: cpuBatch,
          mode: 'council, 4 models + chairman, new conversations (title call beside stage 1)',
          workers: 1,
          gateways: 1,
        },
        figures: {
          overheadPerStageMs: { http, simulated },
          elapsedMs: {
            http: medianOf('http', (m) => m.elapsedMs),
            simulated: medianOf('simulated', (m) => m.elapsedMs),
          },
          modelMsOnCriticalPath: { http: medianOf('http', (m) => m.modelMs), simulated: STAGES * LATENCY_MS },
          connections: {
            sequential: { calls: httpCalls, accepted: newConnections, peakConcurrentCalls },
            batch: { calls: batchCalls, accepted: batchConnections, peakConcurrentCalls: batchPeak },
            total: server.connections,
          },
          cpuMsPerDeliberation: cpuOf,
          runs: measured,
          ...(profile ? { workerProfile: profile } : {}),
        },
        checks,
        tables: [
          {
            table: {
              columns: [
                'models',
                'runs',
                '202 → complete p50 (ms)',
                'models on the critical path (ms)',
                'overhead per stage p50 / p95 (ms)',
              ],
              rows: KINDS.map((kind) => {
                const s = stat(kind);
                return [
                  kind === 'http' ? 'over HTTP (local chat-completions server)' : 'simulated (in the worker)',
                  measured.filter((m) => m.kind === kind).length,
                  medianOf(kind, (m) => m.elapsedMs),
                  medianOf(kind, (m) => m.modelMs),
                  `**${s.p50}** / ${s.p95}`,
                ];
              }),
            },
          },
          {
            caption: `CPU ms per council (${cpuBatch} per kind, ${ctx.quick ? 5 : 20} in flight; the model server runs in the benchmark process and is not counted):`,
            table: {
              columns: ['process', 'simulated', 'over HTTP'],
              rows: [
                ...processes.map((p) => [
                  p,
                  cpuOf.simulated.msPerDeliberation[p] ?? '–',
                  cpuOf.http.msPerDeliberation[p] ?? '–',
                ]),
                ['total', `**${cpuOf.simulated.totalMs}**`, `**${cpuOf.http.totalMs}**`],
              ],
            },
          },
          ...(profile ? profileTables(profile, 'during the councils over HTTP') : []),
        ],
        method: [
          `The worker and the gateway run with OPENAI_BASE_URL pointing at a local chat-completions server (libs/llm/src/testing/chat-completions-server.ts) in the benchmark process: \`local/…\` models go over HTTP through the OpenAI-compatible provider (the official SDK, streaming), \`sim/…\` ones to the simulated provider, in the same stack.`,
          `The server answers each prompt as the simulated provider would (its responders, seeded alike), streamed in ${CHUNKS} pieces ${GAP_MS} ms apart (≈ ${LATENCY_MS} ms a call); the simulated models take ${LATENCY_MS} ms in ${CHUNKS} pieces too.`,
          `Overhead: ${runs} councils of each kind one at a time, taking turns (after ${warmup} warm-ups each and an ANALYZE). Over HTTP the models' time on the critical path is each layer's slowest call as the server saw it (request received → response ended), summed over the 3 layers; simulated, 3 × ${LATENCY_MS} ms. Per stage = (202 → \`complete\` at a Socket.IO client − that) ÷ 3.`,
          'Connections: TCP connections the server accepted during the runs against the calls it answered; with keep-alive they stay at most the number of calls in flight at once.',
          `CPU: user + system time from /proc of PostgreSQL (all backends), worker, gateway and Redis around a batch of ${cpuBatch} councils of each kind, ÷ ${cpuBatch}.`,
        ],
        notes: [
          `Over HTTP the worker spends ${round((cpuOf.http.msPerDeliberation['worker 1'] ?? 0) - (cpuOf.simulated.msPerDeliberation['worker 1'] ?? 0), 1)} ms more per council than with the simulated models (10 model calls, ${CHUNKS + 4} event-stream lines each): per call, the SDK's request (undici's fetch) and reading the stream through WHATWG streams and the SDK's event-stream parser${profile ? ' (profile above)' : ''}. PostgreSQL, the gateway and Redis do the same work either way. In this scenario the benchmark process also serves the models, so every figure is higher than in \`cpu\`: compare the two columns with each other.`,
          `Keep-alive: the provider's SDK uses Node's fetch, whose pool keeps connections open between calls; one council at a time the server accepted ${newConnections} new connections for ${httpCalls} calls, and ${batchConnections} for ${batchCalls} calls with up to ${batchPeak} calls in flight.`,
        ],
        limits: checks[0].met
          ? []
          : [
              `Over HTTP a stage costs ${http.p50} ms beyond its models at the median (simulated: ${simulated.p50} ms): the SDK's request and event-stream parsing, and the server's own pacing (its timers run in the benchmark process, which also runs the clients).`,
            ],
        evidence: {},
      };
    } finally {
      await stack.stop();
      await server?.close();
    }
  },
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

import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '@conclave/deliberation';
import { hashString, parseSimModel, seededRandom } from '@conclave/llm';
import type { DeliveredEvent } from '@conclave/contracts';
import IORedis from 'ioredis';
import { io, type Socket } from 'socket.io-client';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type RecordedChatRequest,
  type ScriptContext,
} from '../../libs/llm/src/testing/chat-completions-server';
import { freePort } from '../../test/support/private-postgres';
import { PrivateRedis } from '../../test/support/private-redis';
import { http, now } from '../lib/client';
import { BenchPostgres } from '../lib/servers';
import { BenchStack, type BenchContext, type Spawned } from '../lib/stack';
import { mapLimit, max, median, round, sleep } from '../lib/stats';
import { type Check, type Scenario } from '../lib/types';

const SEED = 'bench-faults';
const MODES = ['council', 'vote', 'jury', 'debate', 'delphi'] as const;
type Mode = (typeof MODES)[number];
const FAULTS = ['worker killed', 'gateway killed', 'Redis restarted empty', 'PostgreSQL down 10 s'] as const;
type Fault = (typeof FAULTS)[number];
const TERMINAL = new Set(['complete', 'error', 'cancelled']);
/** A call the provider received this long after the stop was accepted counts as "after a stop". */
const AFTER_STOP_TOLERANCE_MS = 250;
/** Where a fault strikes: this long after the phase's deliberations were accepted (mid-stage). */
const FAULT_AT_MS = 5000;
/** Cancels are sent this long after the fault began. */
const CANCEL_AT_MS = 1000;

const lastUser = (messages: unknown[]): string =>
  [...(messages as { role?: string; content?: string }[])].reverse().find((m) => m.role === 'user')
    ?.content ?? '';

/** Each call answers as the simulated provider would, after 1–4 s (seeded by model and prompt). */
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
  const delayMs = 1000 + (hashString(`${SEED}|delay|${model}|${prompt}`) % 3000);
  return { kind: 'success', content, delayMs, chunks: 4, promptTokens: 100, completionTokens: 50 };
}

const TOKEN = /\bFQ(\d+)x(\d+)\b/;
const token = (phase: number, i: number) => `FQ${phase}x${i}`;

/** Every model id of a deliberation carries its token: the provider's requests are attributed by model. */
function request(mode: Mode, tag: string): Record<string, unknown> {
  const m = (name: string) => `local/${name}-${tag}`;
  switch (mode) {
    case 'council':
      return {
        question: `${tag} council: what makes a good API?`,
        councilModels: [m('a'), m('b'), m('c')],
        chairmanModel: m('chair'),
      };
    case 'vote':
      return {
        question: `${tag} vote: which editor?`,
        mode,
        modeConfig: { models: [m('a'), m('b'), m('c')] },
      };
    case 'jury':
      return {
        question: `${tag} jury: is this accurate?`,
        mode,
        modeConfig: {
          content: 'Water boils at 100 °C at sea level.',
          jurorModels: [m('j1'), m('j2'), m('j3')],
          foremanModel: m('foreman'),
        },
      };
    case 'debate':
      return {
        question: `${tag} debate: tabs or spaces?`,
        mode,
        modeConfig: { models: [m('a'), m('b'), m('c')] },
      };
    case 'delphi':
      return {
        question: `${tag} delphi: how many piano tuners are there in Chicago?`,
        mode,
        modeConfig: { panelistModels: [m('p1'), m('p2'), m('p3')], facilitatorModel: m('f'), maxRounds: 2 },
      };
  }
}

interface Subscription {
  messageId: string;
  seqs: number[];
  types: string[];
  terminal: string | null;
  done: () => void;
  ended: Promise<void>;
}

/**
 * One Socket.IO client following many deliberations, as the web client does: when its gateway
 * goes away it connects to another and subscribes again after the last seq it has (replay from
 * PostgreSQL). Ends a subscription at `complete`, `error` or `cancelled`.
 */
class MovingSubscriber {
  private socket: Socket | null = null;
  readonly subs = new Map<string, Subscription>();
  moves = 0;
  private closed = false;

  constructor(
    private baseUrl: string,
    private readonly gateways: () => string[],
  ) {}

  async connect(): Promise<void> {
    const socket = io(`${this.baseUrl}/deliberations`, {
      transports: ['websocket'],
      reconnection: false,
      timeout: 10_000,
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', (error) => reject(error));
    });
    socket.onAny((name: string, event: DeliveredEvent) => {
      const sub = event?.messageId ? this.subs.get(event.messageId) : undefined;
      if (!sub || typeof event.seq !== 'number') return;
      sub.seqs.push(event.seq);
      sub.types.push(event.type);
      if (TERMINAL.has(name) && !sub.terminal) {
        sub.terminal = name;
        sub.done();
      }
    });
    socket.on('disconnect', () => {
      if (!this.closed) void this.move();
    });
    this.socket = socket;
  }

  private async move(): Promise<void> {
    this.moves += 1;
    const until = Date.now() + 60_000;
    while (!this.closed && Date.now() < until) {
      for (const baseUrl of this.gateways()) {
        try {
          this.baseUrl = baseUrl;
          await this.connect();
          for (const sub of this.subs.values()) if (!sub.terminal) await this.subscribe(sub);
          return;
        } catch {
          // the next gateway
        }
      }
      await sleep(250);
    }
  }

  private async subscribe(sub: Subscription): Promise<void> {
    const afterSeq = sub.seqs.length > 0 ? Math.max(...sub.seqs) : 0;
    for (let attempt = 0; attempt < 60; attempt++) {
      const ack = (await this.socket
        ?.timeout(10_000)
        .emitWithAck('subscribe', { messageId: sub.messageId, afterSeq })
        .catch(() => null)) as { ok?: boolean } | null;
      if (ack?.ok) return;
      await sleep(500);
    }
  }

  async follow(messageId: string): Promise<Subscription> {
    let done: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (done = resolve));
    const sub: Subscription = { messageId, seqs: [], types: [], terminal: null, done, ended };
    this.subs.set(messageId, sub);
    await this.subscribe(sub);
    return sub;
  }

  close(): void {
    this.closed = true;
    this.socket?.disconnect();
  }
}

interface PhaseRecord {
  fault: Fault;
  ids: string[];
  batchId: string | null;
  /** Unfinished (queued or running) when the fault struck. */
  inFlight: string[];
  faultAt: number;
  /** When the faulted part was back (for kills: the kill itself, the rest of the fleet runs on). */
  recoveredAt: number;
  cancels: { messageId: string; acceptedAt: number | null; refusals: number }[];
  unfinishedAfterWait: number;
}

/**
 * Faults injected from outside under mixed load: two gateways and two workers on their own
 * PostgreSQL and Redis, deliberations of all five modes (and a batch) mid-stage when each fault
 * strikes, cancels sent during it. The models sit behind a local chat-completions server that
 * counts every call it receives, so the provider's own count can be compared with what Conclave
 * stored.
 */
export const faults: Scenario = {
  name: 'faults',
  title: 'Faults under load: worker killed, gateway killed, Redis restarted empty, PostgreSQL down 10 s',
  target:
    'lost 0, duplicated 0, seq gaps 0, calls after a stop 0, extra provider calls 0; running work resumes within 10 s of a worker death or of Redis returning empty (issue 34)',
  optIn: true,
  async run(outer) {
    const perPhase = outer.quick ? 10 : 25;
    const batchItems = outer.quick ? 6 : 20;
    const cancelsPerPhase = outer.quick ? 2 : 4;
    const postgres = await BenchPostgres.create(400);
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    const served: { request: RecordedChatRequest; receivedAt: number }[] = [];
    const server = await startChatCompletionsServer((context) => {
      served.push({ request: context.request, receivedAt: Date.now() });
      return answer(context);
    });
    const ctx: BenchContext = {
      ...outer,
      servers: {
        kind: 'private',
        databaseUrl: (name) => postgres.url(name),
        redisUrl: redis.url,
        postgresPid: postgres.pid(),
        redisPid: null,
      },
    };
    const stack = await new BenchStack(ctx, {
      // Fewer slots than stages in flight: some jobs always wait in Redis (what a Redis restart loses).
      WORKER_CONCURRENCY: outer.quick ? '4' : '10',
      WORKER_SHUTDOWN_TIMEOUT_MS: '5000',
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: 'bench-key',
    }).init();
    const subscribers: MovingSubscriber[] = [];
    try {
      const gateways: Spawned[] = [];
      const workers: Spawned[] = [];
      const [g1, g2, w1, w2] = await Promise.all([
        stack.spawnGateway(),
        stack.spawnGateway(),
        stack.spawnWorker(),
        stack.spawnWorker(),
      ]);
      gateways.push(g1, g2);
      workers.push(w1, w2);
      const alive = (s: Spawned) => s.child.exitCode === null && s.child.signalCode === null;
      const urls = () => gateways.filter(alive).map((g) => g.baseUrl ?? '');
      for (const gateway of gateways) {
        const subscriber = new MovingSubscriber(gateway.baseUrl ?? '', urls);
        await subscriber.connect();
        subscribers.push(subscriber);
      }

      const phases: PhaseRecord[] = [];
      for (const [p, fault] of FAULTS.entries()) {
        ctx.log(`faults: ${fault}`);
        // Accepted over both gateways, followed on both; a batch beside them.
        const accepted = await mapLimit(
          Array.from({ length: perPhase }, (_, i) => i),
          6,
          async (i) => {
            const at = urls()[i % urls().length];
            const answer = await http<{ messageId: string }>(
              at,
              'POST',
              '/api/deliberations',
              request(MODES[i % MODES.length], token(p, i)),
            );
            if (answer.status !== 202) throw new Error(`POST answered ${answer.status}`);
            return answer.body.messageId;
          },
        );
        const followed = await Promise.all(
          accepted.map((id, i) => subscribers[i % subscribers.length].follow(id)),
        );
        const batch = await http<{ batchId: string }>(urls()[0], 'POST', '/api/batches', {
          name: `faults ${p}`,
          items: Array.from({ length: batchItems }, (_, i) => {
            const tag = token(p, 1000 + i);
            return {
              question: `${tag} item: what is ${i} squared?`,
              councilModels: [`local/a-${tag}`, `local/b-${tag}`],
              chairmanModel: `local/chair-${tag}`,
            };
          }),
          concurrency: 5,
          generateTitles: false,
        });
        const batchId = batch.status === 202 ? batch.body.batchId : null;
        if (!batchId) ctx.log(`faults: the batch was refused: ${batch.status} ${JSON.stringify(batch.body)}`);
        await sleep(FAULT_AT_MS);

        const inFlight = (
          (await stack.db.query(
            `SELECT id FROM messages WHERE role = 'assistant' AND status IN ('queued', 'running')
               AND (id = ANY($1::uuid[]) OR batch_id = $2)`,
            [accepted, batchId],
          )) as { id: string }[]
        ).map((r) => r.id);
        const faultAt = now();
        const toCancel = accepted.filter((id) => inFlight.includes(id)).slice(0, cancelsPerPhase);
        const cancelling = sleep(CANCEL_AT_MS).then(() =>
          Promise.all(
            toCancel.map(async (messageId) => {
              let refusals = 0;
              for (let attempt = 0; attempt < 120; attempt++) {
                const base = urls()[urls().length - 1];
                const answer = await http(base, 'POST', `/api/deliberations/${messageId}/cancel`).catch(
                  () => null,
                );
                if (answer?.status === 200) return { messageId, acceptedAt: answer.at, refusals };
                if (answer?.status === 409) return { messageId, acceptedAt: null, refusals };
                refusals += 1;
                await sleep(500);
              }
              return { messageId, acceptedAt: null, refusals };
            }),
          ),
        );
        let recoveredAt = faultAt;
        if (fault === 'worker killed') {
          const victim = workers.shift() as Spawned;
          victim.child.kill('SIGKILL');
          recoveredAt = now();
          workers.push(await stack.spawnWorker());
        } else if (fault === 'gateway killed') {
          const victim = gateways.shift() as Spawned;
          victim.child.kill('SIGKILL');
          recoveredAt = now();
          gateways.push(await stack.spawnGateway());
        } else if (fault === 'Redis restarted empty') {
          await redis.kill();
          await sleep(2000);
          await redis.start();
          recoveredAt = now();
        } else {
          await postgres.stop();
          await sleep(10_000);
          await postgres.start();
          recoveredAt = now();
        }
        const cancels = await cancelling;
        const waitUntil = Date.now() + 240_000;
        await Promise.race([Promise.all(followed.map((s) => s.ended)), sleep(240_000)]);
        // The batch's items too.
        let unfinishedAfterWait = 0;
        do {
          const [{ n }] = (await stack.db.query(
            `SELECT count(*)::int AS n FROM messages WHERE role = 'assistant' AND status IN ('queued', 'running')
               AND (id = ANY($1::uuid[]) OR batch_id = $2)`,
            [accepted, batchId],
          )) as { n: number }[];
          unfinishedAfterWait = n;
          if (n > 0) await sleep(1000);
        } while (unfinishedAfterWait > 0 && Date.now() < waitUntil);
        phases.push({
          fault,
          ids: accepted,
          batchId,
          inFlight,
          faultAt,
          recoveredAt,
          cancels,
          unfinishedAfterWait,
        });
        // Calls aborted at the end settle and are stored within a moment.
        await sleep(2000);
      }

      // The price of the short lock and stalled interval: Redis commands per second with nothing to
      // do, two workers and two gateways, with today's defaults and with the old 30 s ones.
      const commandsPerSecond = async (ms: number): Promise<number> => {
        const probe = new IORedis(redis.url);
        try {
          const read = async () =>
            Number(/total_commands_processed:(\d+)/.exec(await probe.info('stats'))?.[1] ?? Number.NaN);
          const before = await read();
          await sleep(ms);
          return round(((await read()) - before - 1) / (ms / 1000), 1);
        } finally {
          probe.disconnect();
        }
      };
      await sleep(3000);
      const idleNow = await commandsPerSecond(outer.quick ? 5000 : 15_000);
      for (const worker of [...workers]) await stack.stopWorker(worker, 10_000);
      workers.length = 0;
      const OLD = { WORKER_LOCK_MS: '30000', WORKER_STALLED_INTERVAL_MS: '30000' };
      workers.push(...(await Promise.all([stack.spawnWorker(OLD), stack.spawnWorker(OLD)])));
      await sleep(3000);
      const idleOld = await commandsPerSecond(outer.quick ? 5000 : 15_000);
      ctx.log(
        `faults: Redis commands/s at rest: ${idleNow} (defaults) vs ${idleOld} (30 s lock and stalled interval)`,
      );

      // Every figure from what PostgreSQL holds, what subscribers received, what the provider saw.
      const rows: (string | number)[][] = [];
      const checks: Check[] = [];
      const totals = { lost: 0, duplicated: 0, gaps: 0, afterStop: 0, extra: 0 };
      const figures: Record<string, unknown> = {};
      for (const [p, phase] of phases.entries()) {
        const batchIds: string[] = phase.batchId
          ? (
              (await stack.db.query(`SELECT id FROM messages WHERE role = 'assistant' AND batch_id = $1`, [
                phase.batchId,
              ])) as { id: string }[]
            ).map((r) => r.id)
          : [];
        const all = [...phase.ids, ...batchIds];
        const statuses = (await stack.db.query(
          `SELECT status, count(*)::int AS n FROM messages WHERE id = ANY($1::uuid[]) GROUP BY status`,
          [all],
        )) as { status: string; n: number }[];
        const unfinished = statuses
          .filter((s) => s.status === 'queued' || s.status === 'running')
          .reduce((n, s) => n + s.n, 0);
        const [{ dups }] = (await stack.db.query(
          `SELECT count(*)::int AS dups FROM (SELECT 1 FROM deliberation_stages WHERE message_id = ANY($1::uuid[])
             GROUP BY message_id, stage_type, model, participant HAVING count(*) > 1) d`,
          [all],
        )) as { dups: number }[];
        // Subscribers: seqs 1..N with N the stored count, each once.
        const stored = new Map(
          (
            (await stack.db.query(
              `SELECT message_id, max(seq)::int AS n FROM deliberation_events WHERE message_id = ANY($1::uuid[]) GROUP BY message_id`,
              [phase.ids],
            )) as { message_id: string; n: number }[]
          ).map((r) => [r.message_id, r.n]),
        );
        let gaps = 0;
        let repeats = 0;
        for (const subscriber of subscribers) {
          for (const id of phase.ids) {
            const sub = subscriber.subs.get(id);
            if (!sub) continue;
            const seen = new Set(sub.seqs);
            repeats += sub.seqs.length - seen.size;
            const n = stored.get(id) ?? 0;
            for (let seq = 1; seq <= n; seq++) if (!seen.has(seq)) gaps += 1;
          }
        }
        // The provider's own count against the calls stored: each request is the phase's by the
        // token in its model id (FQ<phase>x<n>), each deliberation's by its n.
        const tokenCalls = new Map<string, number[]>();
        for (const call of served) {
          const match = TOKEN.exec(call.request.model ?? '');
          if (!match || Number(match[1]) !== p) continue;
          tokenCalls.set(match[0], [...(tokenCalls.get(match[0]) ?? []), call.receivedAt]);
        }
        const providerCalls = [...tokenCalls.values()].reduce((n, list) => n + list.length, 0);
        // Where the two counts differ, by deliberation, stage and model (a sample for the report).
        const storedBy = (await stack.db.query(
          `SELECT message_id, model, stage, count(*)::int AS n, count(*) FILTER (WHERE error IS NOT NULL)::int AS failed
             FROM model_calls WHERE message_id = ANY($1::uuid[]) GROUP BY 1, 2, 3`,
          [all],
        )) as { message_id: string; model: string; stage: string; n: number; failed: number }[];
        const providerBy = new Map<string, number>();
        for (const call of served) {
          const key = `local/${call.request.model ?? ''}`;
          providerBy.set(key, (providerBy.get(key) ?? 0) + 1);
        }
        const storedByModel = new Map<string, { n: number; detail: string[] }>();
        for (const row of storedBy) {
          const entry = storedByModel.get(row.model) ?? { n: 0, detail: [] };
          entry.n += row.n;
          entry.detail.push(`${row.stage} ${row.n}${row.failed ? ` (${row.failed} failed)` : ''}`);
          storedByModel.set(row.model, entry);
        }
        const differences = [...storedByModel.entries()]
          .filter(([model, entry]) => (providerBy.get(model) ?? 0) !== entry.n)
          .slice(0, 8)
          .map(
            ([model, entry]) =>
              `${model}: provider ${providerBy.get(model) ?? 0}, stored ${entry.detail.join(', ')}`,
          );
        const [{ calls }] = (await stack.db.query(
          `SELECT count(*)::int AS calls FROM model_calls WHERE message_id = ANY($1::uuid[])`,
          [all],
        )) as { calls: number }[];
        let afterStop = 0;
        for (const cancel of phase.cancels) {
          if (cancel.acceptedAt === null) continue;
          const received = tokenCalls.get(token(p, phase.ids.indexOf(cancel.messageId))) ?? [];
          afterStop += received.filter(
            (at) => at > (cancel.acceptedAt as number) + AFTER_STOP_TOLERANCE_MS,
          ).length;
        }
        // Recovery: for work in flight at the fault (and not cancelled), from the fault's end to its next stored event.
        const cancelled = new Set(phase.cancels.map((c) => c.messageId));
        const watched = phase.inFlight.filter((id) => !cancelled.has(id));
        const next = (await stack.db.query(
          `SELECT message_id, extract(epoch FROM min(created_at)) * 1000 AS at FROM deliberation_events
             WHERE message_id = ANY($1::uuid[]) AND created_at > to_timestamp($2::float / 1000)
             GROUP BY message_id`,
          [watched, phase.recoveredAt],
        )) as { message_id: string; at: number }[];
        const recovery = next.map((r) => Number(r.at) - phase.recoveredAt);
        const resumedRows = (await stack.db.query(
          `SELECT payload->>'reason' AS reason, extract(epoch FROM created_at) * 1000 AS at FROM deliberation_events
             WHERE message_id = ANY($1::uuid[]) AND type = 'resumed' ORDER BY created_at`,
          [all],
        )) as { reason: string; at: number }[];
        const resumed = [...new Set(resumedRows.map((r) => r.reason))].map((reason) => ({
          reason,
          n: resumedRows.filter((r) => r.reason === reason).length,
        }));
        // The stages the fault interrupted: from the kill (or Redis answering again) to their `resumed`.
        const resumedAfter = resumedRows.map((r) => Number(r.at) - phase.recoveredAt);
        const lost = unfinished;
        const extra = providerCalls - calls;
        totals.lost += lost;
        totals.duplicated += dups + repeats;
        totals.gaps += gaps;
        totals.afterStop += afterStop;
        totals.extra += extra;
        const accepted = phase.cancels.filter((c) => c.acceptedAt !== null);
        figures[`phase${p}`] = {
          fault: phase.fault,
          deliberations: phase.ids.length,
          batchItems: batchIds.length,
          statuses: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
          inFlightAtFault: phase.inFlight.length,
          lost,
          duplicatedRows: dups,
          repeatedSeqs: repeats,
          seqGaps: gaps,
          cancels: phase.cancels.map((c) => ({
            acceptedAfterFaultMs: c.acceptedAt === null ? null : round(c.acceptedAt - phase.faultAt, 0),
            refusals: c.refusals,
          })),
          callsAfterStop: afterStop,
          providerCalls,
          storedCalls: calls,
          extraProviderCalls: extra,
          differences,
          recoveryMs: {
            n: recovery.length,
            p50: round(median(recovery), 0),
            max: round(max(recovery), 0),
          },
          resumedEvents: Object.fromEntries(resumed.map((r) => [r.reason, r.n])),
          resumedAfterFaultMs: resumedAfter.map((ms) => round(ms, 0)),
          subscriberMoves: subscribers.reduce((n, s) => n + s.moves, 0),
        };
        rows.push([
          phase.fault,
          `${phase.ids.length} + ${batchIds.length}`,
          phase.inFlight.length,
          lost,
          dups + repeats,
          gaps,
          `${accepted.length}/${phase.cancels.length}`,
          afterStop,
          `${providerCalls} / ${calls}`,
          extra,
          recovery.length > 0
            ? `${round(median(recovery) / 1000, 1)} / ${round(max(recovery) / 1000, 1)}`
            : '–',
          resumed.map((r) => `${r.reason} ${r.n}`).join(', ') || '0',
          resumedAfter.length > 0
            ? `${round(median(resumedAfter) / 1000, 1)} / ${round(max(resumedAfter) / 1000, 1)}`
            : '–',
        ]);
        if (phase.fault === 'worker killed' || phase.fault === 'Redis restarted empty') {
          checks.push({
            what: `${phase.fault}: interrupted stages resumed (\`resumed\` stored) after the fault, max`,
            target: '≤ 10 s',
            value:
              resumedAfter.length > 0
                ? `${round(max(resumedAfter) / 1000, 1)} s (${resumedAfter.length} stages)`
                : 'no stage was interrupted',
            met: resumedAfter.length > 0 && max(resumedAfter) <= 10_000,
          });
        }
      }
      checks.unshift(
        { what: 'lost (not ended)', target: '0', value: String(totals.lost), met: totals.lost === 0 },
        {
          what: 'duplicated (stage rows, seqs received twice)',
          target: '0',
          value: String(totals.duplicated),
          met: totals.duplicated === 0,
        },
        { what: 'seq gaps at subscribers', target: '0', value: String(totals.gaps), met: totals.gaps === 0 },
        {
          what: `provider calls started > ${AFTER_STOP_TOLERANCE_MS} ms after an accepted cancel`,
          target: '0',
          value: String(totals.afterStop),
          met: totals.afterStop === 0,
        },
        {
          what: 'extra provider calls (provider count − stored calls)',
          target: '0',
          value: String(totals.extra),
          met: totals.extra === 0,
        },
      );
      return {
        name: 'faults',
        title: faults.title,
        target: faults.target,
        parameters: {
          gateways: 2,
          workers: 2,
          deliberationsPerPhase: perPhase,
          modes: MODES.join(', '),
          batchItemsPerPhase: batchItems,
          cancelsPerPhase,
          perCallLatency: '1–4 s (seeded by model and prompt), local chat-completions server',
          faultAfterMs: FAULT_AT_MS,
          cancelAfterFaultMs: CANCEL_AT_MS,
          settings:
            'defaults: WORKER_LOCK_MS 5000, WORKER_STALLED_INTERVAL_MS 2000, WORKER_HEARTBEAT_MS 1000, RECONCILE_* 30000',
        },
        figures: { ...figures, totals, redisCommandsPerSecondAtRest: { defaults: idleNow, old30s: idleOld } },
        checks,
        tables: [
          {
            table: {
              columns: [
                'fault',
                'deliberations + batch items',
                'in flight at the fault',
                'lost',
                'duplicated',
                'seq gaps',
                'cancels accepted',
                'calls after a stop',
                'provider calls / stored',
                'extra calls',
                'next event after the fault p50 / max (s)',
                '`resumed` events',
                '`resumed` after the fault p50 / max (s)',
              ],
              rows,
            },
          },
        ],
        method: [
          `Per fault: ${perPhase} deliberations over both gateways (the five modes in turn, each followed on a Socket.IO connection that moves to the other gateway and resubscribes after its last seq when its own dies) and a ${batchItems}-item council batch (concurrency 5); every call answers after 1–4 s from a local chat-completions server (the OpenAI-compatible provider, as in production), which records every request it receives.`,
          `${FAULT_AT_MS / 1000} s after they were accepted (mid-stage) the fault strikes: a worker SIGKILLed (a replacement is started at once), a gateway SIGKILLed (likewise), the private Redis SIGKILLed and started again empty 2 s later, or PostgreSQL stopped (fast shutdown) for 10 s. ${CANCEL_AT_MS / 1000} s into the fault ${cancelsPerPhase} of the deliberations in flight are cancelled through a live gateway (retried every 0.5 s while refused).`,
          'Lost: deliberations or items still queued or running 4 min after the fault. Duplicated: stage rows stored twice, and seqs a subscriber received twice. Seq gaps: seqs 1..N (N stored) a subscriber never received.',
          `Calls after a stop: requests the provider received more than ${AFTER_STOP_TOLERANCE_MS} ms after the cancel's 200. Extra provider calls: requests the provider received for the phase's deliberations (matched by a token in the question) minus model_calls rows stored for them (a stored row is a call made, answered, failed or aborted).`,
          "Next event after the fault: for each deliberation or item queued or running when the fault struck (and not cancelled), the time from the fault's end (the kill; Redis or PostgreSQL answering again) to its next stored event. It includes waits that are not the fault's: a stage job waiting for a free slot (the workers have fewer slots than stages in flight) and batch items waiting for their batch's concurrency.",
          '`resumed` after the fault: for each stage the fault interrupted, from the kill (or Redis answering again) to its stored `resumed` event: written as the stalled job starts again on another worker (so a wait for a free slot is included), or as the lost job is enqueued again.',
        ],
        limits: [],
        notes: [
          `Redis commands per second at rest (2 workers, 2 gateways, nothing running): ${idleNow} with the defaults (5 s lock, 2 s stalled-job check, 1 s heartbeat) vs ${idleOld} with the old 30 s lock and stalled interval (heartbeat still on). Under load a worker adds one lock-renewal script per 1.25 s for all its active jobs together.`,
        ],
        evidence: {},
      };
    } finally {
      for (const subscriber of subscribers) subscriber.close();
      if (!redis.running) await redis.start().catch(() => undefined);
      await postgres.start().catch(() => undefined);
      await stack.stop();
      await server.close();
      await redis.kill();
      await postgres.destroy();
    }
  },
};

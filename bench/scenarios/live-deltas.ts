import { cpus } from 'node:os';
import type { LiveEvent } from '@conclave/contracts';
import { Follower, LIVE_EVENT_TYPES, startDeliberation, type Followed } from '../lib/client';
import {
  diffRedis,
  emptyTally,
  LiveTap,
  mergeTally,
  readRedisCounters,
  tallyLive,
  tallyStored,
  type LiveTally,
} from '../lib/live';
import { ProcSampler } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { mapLimit, round, sleep, summary } from '../lib/stats';
import type { Check, Scenario } from '../lib/types';
import { describeCpu, requestFor } from './overhead';

const LATENCY_MS = 1500;
const STREAM_PIECES = 30;
const RSS_LIMIT_MB = 300;
const GATEWAYS = 2;
/** Between one deliberation's 202 and the next POST. */
const SPACING_MS = 100;
/** How long after the last terminal event late live pieces are still collected. */
const GRACE_MS = 1000;

const mb = (bytes: number) => round(bytes / 1024 / 1024);

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

export const liveDeltas: Scenario = {
  name: 'live-deltas',
  title: 'Live token deltas to many Socket.IO clients',
  target:
    `every client receives every delta of its own deliberation (stitched text = stored answer) and none ` +
    `of others'; stored events exactly once, in order; gateway RSS ≤ ${RSS_LIMIT_MB} MB each`,
  async run(ctx) {
    const clients = ctx.quick ? 100 : 1000;
    const deliberations = ctx.quick ? 5 : 50;
    const perDeliberation = clients / deliberations;
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      SIM_STREAM_PIECES: String(STREAM_PIECES),
      // Every deliberation's stage job at once (its title call runs inside it).
      WORKER_CONCURRENCY: String(2 * deliberations + 10),
    }).init();
    try {
      await Promise.all([
        ...Array.from({ length: GATEWAYS }, () => stack.spawnGateway()),
        stack.spawnWorker(),
      ]);
      // Warm-up: one streamed deliberation watched with deltas through each gateway.
      const warmUp = await startDeliberation(stack.baseUrl, requestFor('council', 10_000));
      await Promise.all(
        stack.gateways.map(async (_, g) =>
          (await stack.follower(g)).follow(warmUp.messageId, 60_000, undefined, { deltas: true }),
        ),
      );

      const cpuFrom = ctx.sampler.cpu();
      ctx.sampler.resetPeaks();
      const connectStarted = Date.now();
      // Client c follows deliberation ⌊c / perDeliberation⌋ through gateway c mod 2: the clients of
      // one deliberation are spread over both gateways.
      const followers = await mapLimit(
        Array.from({ length: clients }, (_, i) => i),
        50,
        (i) => Follower.connect(stack.gateways[i % GATEWAYS].baseUrl),
      );
      const connectSeconds = (Date.now() - connectStarted) / 1000;
      const ackMs: number[] = [];
      const subscribedAt = new Array<number>(clients).fill(Infinity);
      const started: { messageId: string; acceptedAt: number }[] = [];
      const all: Promise<Followed>[] = [];
      try {
        const tap = await LiveTap.start(ctx.servers.redisUrl, stack.test.config.redisPrefix);
        const redisFrom = await readRedisCounters(ctx.servers.redisUrl);
        const windowStarted = Date.now();
        for (let d = 0; d < deliberations; d++) {
          const accepted = await startDeliberation(
            stack.gateways[d % GATEWAYS].baseUrl,
            requestFor('council', d),
          );
          started.push(accepted);
          for (let k = 0; k < perDeliberation; k++) {
            const c = d * perDeliberation + k;
            const asked = Date.now();
            all.push(
              followers[c].follow(
                accepted.messageId,
                180_000,
                (at) => {
                  ackMs.push(at - asked);
                  subscribedAt[c] = at;
                },
                { deltas: true },
              ),
            );
          }
          await sleep(SPACING_MS);
        }
        const followed = await Promise.all(all);
        const lastTerminal = followed.reduce((m, f) => Math.max(m, f.terminalAt), 0);
        await sleep(GRACE_MS);
        const windowSeconds = (Date.now() - windowStarted) / 1000;
        const redisDiff = diffRedis(redisFrom, await readRedisCounters(ctx.servers.redisUrl));
        tap.stop();
        // Without what the benchmark's own listener was sent.
        const redis = redisDiff
          ? { ...redisDiff, netOutBytes: Math.max(0, redisDiff.netOutBytes - tap.bytes) }
          : null;
        const cpu = ProcSampler.report(cpuFrom, ctx.sampler.cpu(), cpus().length);
        const peakRssMb = ctx.sampler.peakRss();

        // Stored events, as fan-out checks them; live text per call against each stored answer.
        const stored = await Promise.all(
          started.map(
            ({ messageId }) =>
              stack.db.query('SELECT seq, type FROM deliberation_events WHERE message_id = $1 ORDER BY seq', [
                messageId,
              ]) as Promise<{ seq: number; type: string }[]>,
          ),
        );
        const storedTotals = {
          expected: 0,
          received: 0,
          missing: 0,
          duplicated: 0,
          outOfOrder: 0,
          wrongType: 0,
        };
        const live = emptyTally();
        const perClient: LiveTally[] = [];
        let foreignLive = 0;
        let foreignStored = 0;
        const foreignSamples: string[] = [];
        let lateStored = 0;
        followed.forEach((f, c) => {
          const d = Math.floor(c / perDeliberation);
          const s = tallyStored(f, stored[d]);
          for (const key of Object.keys(storedTotals) as (keyof typeof storedTotals)[])
            storedTotals[key] += s[key];
          const follower = followers[c];
          const late = follower.late.get(f.messageId) ?? [];
          lateStored += late.filter((l) => !LIVE_EVENT_TYPES.includes(l.name)).length;
          const lateLive = late
            .filter((l) => LIVE_EVENT_TYPES.includes(l.name))
            .map((l) => ({ at: l.at, event: l.event as LiveEvent }));
          const tally = tallyLive(f, subscribedAt[c], lateLive, `client ${c} (${f.messageId.slice(0, 8)}) `);
          perClient.push(tally);
          mergeTally(live, tally);
          for (const [name, n] of Object.entries(follower.unasked.foreign)) {
            if (LIVE_EVENT_TYPES.includes(name)) foreignLive += n;
            else foreignStored += n;
          }
          foreignLive += follower.unasked.liveWithoutDeltas;
          for (const sample of follower.unasked.samples)
            if (foreignSamples.length < 5)
              foreignSamples.push(
                `client ${c} (own ${f.messageId}) got ${sample.name} of ${sample.messageId}`,
              );
        });
        // What Redis carried, as the tap saw it: delivery lag of each call's last piece (Redis → client),
        // the worker's order (last piece vs the succeeded event, on Redis), and where missing text went.
        const pieceLag: number[] = [];
        const workerOrder = new Map<string, number>();
        const faulty = new Map<
          string,
          {
            clients: number;
            gateways: Set<number>;
            liveChars: number[];
            contentChars: number;
            publishedChars: number;
            /** On Redis: terminal event − the piece that completed the published text (ms). */
            tailBeforeTerminalMs: number | null;
            /** At the clients: terminal received − last live piece received (ms). */
            clientTerminalAfterLastPieceMs: number[];
          }
        >();
        followed.forEach((f, c) => {
          for (const call of perClient[c].perCall) {
            const onRedis = tap.call(f.messageId, call.stage, call.participant);
            const key = `${f.messageId} ${call.stage}/${call.participant}`;
            if (onRedis.endAt !== null && onRedis.succeededAt !== null)
              workerOrder.set(key, onRedis.endAt - onRedis.succeededAt);
            if (call.outcome === 'complete' && call.lastPieceAt !== null && onRedis.endAt !== null)
              pieceLag.push(call.lastPieceAt - onRedis.endAt);
            if (call.outcome !== 'incomplete' && call.outcome !== 'mismatched') continue;
            const entry = faulty.get(key) ?? {
              clients: 0,
              gateways: new Set<number>(),
              liveChars: [],
              contentChars: call.contentChars,
              publishedChars: onRedis.publishedChars,
              tailBeforeTerminalMs:
                onRedis.endAt !== null && onRedis.terminalAt !== null
                  ? onRedis.terminalAt - onRedis.endAt
                  : null,
              clientTerminalAfterLastPieceMs: [],
            };
            entry.clients += 1;
            entry.gateways.add(c % GATEWAYS);
            entry.liveChars.push(call.liveChars);
            if (call.lastPieceAt !== null)
              entry.clientTerminalAfterLastPieceMs.push(f.terminalAt - call.lastPieceAt);
            faulty.set(key, entry);
          }
        });
        const faultyCalls = [...faulty.entries()].map(([call, e]) => ({
          call,
          clients: e.clients,
          gateways: e.gateways.size,
          liveChars: [...new Set(e.liveChars)],
          contentChars: e.contentChars,
          publishedChars: e.publishedChars,
          tailBeforeTerminalMs: e.tailBeforeTerminalMs === null ? null : round(e.tailBeforeTerminalMs),
          clientTerminalAfterLastPieceMs: summary(e.clientTerminalAfterLastPieceMs, 0),
        }));
        const publishedWhole = faultyCalls.filter((f) => f.publishedChars >= f.contentChars);
        const lag = summary(pieceLag, 0);
        const order = summary([...workerOrder.values()], 0);
        const storedExact =
          storedTotals.missing === 0 &&
          storedTotals.duplicated === 0 &&
          storedTotals.outOfOrder === 0 &&
          storedTotals.wrongType === 0;
        const liveExact =
          live.incomplete === 0 &&
          live.mismatched === 0 &&
          live.gaps === 0 &&
          live.withoutContent === 0 &&
          live.complete > 0;
        const gatewayRss = stack.gateways.map((g) => peakRssMb[g.label] ?? Number.NaN);
        const clientsAllComplete = perClient.filter(
          (t) => t.calls > 0 && t.complete + t.endedBeforeSubscribed === t.calls && t.mismatched === 0,
        ).length;
        const deltaSpanS = Math.max(0.001, (live.lastDeltaAt - live.firstDeltaAt) / 1000);
        const deltasPerSecond = round(live.deltas / deltaSpanS, 0);
        const lastPiece = summary(live.lastPieceVsStoredMs, 0);
        const rate = summary(live.maxDeltasPerSecond, 0);
        const ack = summary(ackMs, 0);
        const deltasPerClient = summary(
          perClient.map((t) => t.deltas),
          0,
        );

        const checks: Check[] = [
          {
            what: `${clients} clients, each on 1 of ${deliberations} streamed deliberations: live text of every call`,
            target: 'partial + deltas = stored answer for every call, no gap',
            value:
              `${live.complete} of ${live.calls} calls complete (${clientsAllComplete} of ${clients} clients all complete); ` +
              `incomplete ${live.incomplete}, mismatched ${live.mismatched}, gaps ${live.gaps}` +
              (live.endedBeforeSubscribed > 0
                ? `; ${live.endedBeforeSubscribed} ended before subscribing`
                : ''),
            met: liveExact,
          },
          {
            what: 'live events of other deliberations (or unasked)',
            target: '0',
            value: `${foreignLive} (and ${foreignStored} stored events of other deliberations)`,
            met: foreignLive === 0 && foreignStored === 0,
          },
          {
            what: 'stored events received exactly once, in order',
            target: 'no event missing or duplicated',
            value: `${storedTotals.received} of ${storedTotals.expected} deliveries; missing ${storedTotals.missing}, duplicated ${storedTotals.duplicated}, out of order ${storedTotals.outOfOrder}`,
            met: storedExact,
          },
          ...stack.gateways.map((g, i) => ({
            what: `${g.label} peak RSS`,
            target: `≤ ${RSS_LIMIT_MB} MB`,
            value: `${gatewayRss[i]} MB`,
            met: gatewayRss[i] <= RSS_LIMIT_MB,
          })),
        ];
        const limits: string[] = [];
        if (!liveExact || foreignLive > 0 || foreignStored > 0) {
          limits.push(
            `Live delivery defects: ${[...live.examples, ...foreignSamples].slice(0, 8).join('; ') || 'none recorded'}.`,
          );
        }
        if (faultyCalls.length > 0) {
          const timed = publishedWhole.flatMap((f) =>
            f.tailBeforeTerminalMs === null ? [] : [f.tailBeforeTerminalMs],
          );
          const before = timed.filter((ms) => ms >= 0);
          const after = timed.filter((ms) => ms < 0).map((ms) => -ms);
          const stages = countBy(faultyCalls.map((f) => f.call.split(' ')[1].split('/')[0]));
          const clientGap = summary(
            faultyCalls.flatMap((f) =>
              Number.isFinite(f.clientTerminalAfterLastPieceMs.p50)
                ? [f.clientTerminalAfterLastPieceMs.p50]
                : [],
            ),
            0,
          );
          limits.push(
            `Where the missing text went: ${faultyCalls.length} distinct calls (${live.incomplete + live.mismatched} ` +
              `client × call pairs) lack the end of their live text, by stage ${Object.entries(stages)
                .map(([stage, n]) => `${stage} ${n}`)
                .join(
                  ', ',
                )}. The worker published the whole answer on Redis for ${publishedWhole.length} of them ` +
              `(a listener on the bench's Redis stitched it complete); the piece that completed it passed through ` +
              `Redis close to the deliberation's terminal event: before it in ${before.length} (by at most ` +
              `${round(Math.max(0, ...before))} ms), after it in ${after.length} (by at most ${round(Math.max(0, ...after))} ms). ` +
              `The clients received \`complete\` ${clientGap.p50} ms (median) after their last live piece, and no live ` +
              `piece of the call within ${GRACE_MS} ms after it. Examples: ${faultyCalls
                .slice(0, 3)
                .map(
                  (f) =>
                    `${f.call}: ${f.clients} clients on ${f.gateways} gateway(s) got ${f.liveChars.join('/')} of ` +
                    `${f.contentChars} characters, Redis carried ${f.publishedChars}` +
                    (f.tailBeforeTerminalMs !== null
                      ? `, its last piece ${Math.abs(f.tailBeforeTerminalMs)} ms ${f.tailBeforeTerminalMs >= 0 ? 'before' : 'after'} the terminal event`
                      : ''),
                )
                .join('; ')}.`,
          );
        }
        if (gatewayRss.some((r) => r > RSS_LIMIT_MB)) {
          limits.push(
            `Gateway memory with ${clients / GATEWAYS} sockets each and deltas on: ${gatewayRss.join(' / ')} MB. ${describeCpu(cpu)}.`,
          );
        }
        const redisPerDelta =
          redis && live.deltas > 0 ? round((redis.netOutBytes + redis.netInBytes) / live.deltas, 0) : null;
        const notes = [
          `Deltas: ${live.deltas} delivered in all (${deltasPerSecond}/s over the ${round(deltaSpanS)} s between the first and the last), ` +
            `${live.partials} model_partial; per client p50 ${deltasPerClient.p50}, max ${deltasPerClient.max}. ` +
            `Per call the most deltas within any 1 s at a client: p50 ${rate.p50}, max ${rate.max} ` +
            `(the worker coalesces to ≤ 20/s per call; arrival at the client can bunch).`,
          `Delta lag (Redis → client): the piece that completes a call's text reached the client ${lag.p50} ms after it ` +
            `passed through Redis (p50; p95 ${lag.p95}, max ${lag.max}; measured against a listener on the same Redis, ` +
            `same clock). On Redis the worker published a call's last piece ${order.p50} ms (p50; p95 ${order.p95}, ` +
            `max ${order.max}) after the call's succeeded event (negative: before).`,
          `At the client: a call's last live piece reached the client ${lastPiece.p50} ms (p50; p95 ${lastPiece.p95}, max ${lastPiece.max}) ` +
            `after its succeeded event was stored (PostgreSQL's clock; negative: before). ${live.afterSucceeded} deltas ` +
            `reached their client after the call's own succeeded event (harmless for stitching: a client that shows ` +
            `\`content\` on success can ignore them).`,
          redis
            ? `Redis over the window (${round(windowSeconds)} s, the benchmark's ${ctx.servers.kind} server${ctx.servers.kind === 'shared' ? ': other users count too' : ''}): ` +
              `${redis.commands} commands, ${redis.publishes} PUBLISH, ${mb(redis.netInBytes)} MB in / ${mb(redis.netOutBytes)} MB out (without the ${mb(tap.bytes)} MB sent to the benchmark's own listener)` +
              (redisPerDelta !== null
                ? ` (${redisPerDelta} bytes of Redis traffic per delta delivered to a client)`
                : '') +
              '.'
            : 'Redis counters could not be read.',
          `Subscribing: acknowledgement p50 ${ack.p50} ms, p95 ${ack.p95} ms (${perDeliberation} clients per deliberation subscribe ` +
            `at once, ${perDeliberation / GATEWAYS} on each gateway).`,
          `CPU over the run: ${describeCpu(cpu)}. The ${clients} clients live in the benchmark process.`,
        ];
        const error = !storedExact
          ? `live-deltas: stored events ${storedTotals.missing} missing, ${storedTotals.duplicated} duplicated, ${storedTotals.outOfOrder} out of order`
          : undefined;
        return {
          name: 'live-deltas',
          title: this.title,
          target: this.target,
          parameters: {
            clients,
            gateways: GATEWAYS,
            clientsPerGateway: clients / GATEWAYS,
            deliberations,
            clientsPerDeliberation: perDeliberation,
            mode: `council (3 models + chairman), started ${SPACING_MS} ms apart, alternating gateways`,
            latencyMs: LATENCY_MS,
            streamPieces: STREAM_PIECES,
            workers: 1,
            workerConcurrency: 2 * deliberations + 10,
          },
          figures: {
            stored: storedTotals,
            live: {
              ...live,
              perCall: undefined,
              lastPieceVsStoredMs: lastPiece,
              maxDeltasPerSecond: rate,
            },
            clientsAllComplete,
            foreignLive,
            foreignStored,
            lateStoredEvents: lateStored,
            deltasPerSecond,
            deltasPerClient,
            connectSeconds: round(connectSeconds),
            subscribeAckMs: ack,
            lastTerminalToEndMs: round(Date.now() - lastTerminal),
            deltaLagRedisToClientMs: lag,
            workerLastPieceVsSucceededOnRedisMs: order,
            tapMessages: tap.messages,
            tapBytes: tap.bytes,
            faultyCalls,
            redis,
            redisBytesPerDelta: redisPerDelta,
            gatewayPeakRssMb: gatewayRss,
          },
          checks,
          tables: [
            {
              table: {
                columns: [
                  'clients',
                  'deliberations',
                  'calls checked',
                  'complete / incomplete / mismatched',
                  'gaps',
                  'deltas of other deliberations',
                  'stored missing / duplicated',
                  'deltas received (per s)',
                  'delta lag Redis → client p50 / p95 (ms)',
                  'gateway peak RSS (MB)',
                ],
                rows: [
                  [
                    clients,
                    deliberations,
                    live.calls,
                    `**${live.complete} / ${live.incomplete} / ${live.mismatched}**`,
                    live.gaps,
                    `**${foreignLive}**`,
                    `${storedTotals.missing} / ${storedTotals.duplicated}`,
                    `${live.deltas} (${deltasPerSecond}/s)`,
                    `${lag.p50} / ${lag.p95}`,
                    `**${gatewayRss.join(' / ')}**`,
                  ],
                ],
              },
            },
            ...(redis
              ? [
                  {
                    caption: `Redis (${ctx.servers.kind} server) over the measured window of ${round(windowSeconds)} s`,
                    table: {
                      columns: [
                        'commands',
                        'PUBLISH',
                        'net in (MB)',
                        'net out to the stack (MB)',
                        'bytes per delta delivered to a client',
                      ],
                      rows: [
                        [
                          redis.commands,
                          redis.publishes,
                          mb(redis.netInBytes),
                          mb(redis.netOutBytes),
                          redisPerDelta ?? '–',
                        ],
                      ],
                    },
                  },
                ]
              : []),
          ],
          method: [
            `${clients} Socket.IO clients (websocket transport) connect, half to each of ${GATEWAYS} gateway processes. ${deliberations} council deliberations (3 models + chairman, latency ${LATENCY_MS} ms, each answer streamed in ${STREAM_PIECES} pieces) start ${SPACING_MS} ms apart; right after each 202 its ${perDeliberation} own clients — spread over both gateways — subscribe with \`{ afterSeq: 0, deltas: true }\`. Each client follows exactly one deliberation.`,
            'Per client and call (stage + participant) the `model_partial` (if any) and the `model_delta`s are stitched at their offsets in arrival order and compared with the `content` of the stored `model_progress` succeeded event: complete (equal), incomplete (a strict prefix), mismatched (other text, a gap or a contradicting partial). Calls that ended before the client’s subscription was acknowledged owe no live text and are counted apart. Live events arriving up to 1 s after the terminal event still count.',
            'Any event (live or stored) of a deliberation the client did not subscribe to is counted as foreign. Stored events are compared with `deliberation_events` as in fan-out. Gateway RSS: VmRSS sampled every 200 ms, maximum. Redis: INFO stats / commandstats before and after.',
            'A listener in the benchmark process subscribes to every live channel (PSUBSCRIBE) and to the events channel on one Redis connection: it sees the workers’ publishes in Redis’s order. Delta lag = when a client received the piece that completed a call’s text − when that piece passed through Redis (same clock). For calls whose live text is short, it tells whether the worker published the missing text, and whether before the terminal event.',
          ],
          limits,
          notes,
          evidence: { cpu: { 'live-deltas': cpu }, peakRssMb: { 'live-deltas': peakRssMb } },
          ...(error ? { error } : {}),
        };
      } finally {
        for (const f of followers) f.close();
      }
    } finally {
      await stack.stop();
    }
  },
};

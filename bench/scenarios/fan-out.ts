import { cpus } from 'node:os';
import { Follower, startDeliberation, type Followed } from '../lib/client';
import { ProcSampler } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { mapLimit, round, sleep, summary } from '../lib/stats';
import type { Check, Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LATENCY_MS = 500;
const RSS_LIMIT_MB = 300;
const GATEWAYS = 2;

export const fanOut: Scenario = {
  name: 'fan-out',
  title: 'Fan-out to many Socket.IO clients',
  target: `every client receives every event exactly once; gateway RSS ≤ ${RSS_LIMIT_MB} MB each`,
  async run(ctx) {
    const clients = ctx.quick ? 100 : 1000;
    const deliberations = ctx.quick ? 2 : 10;
    const stack = await new BenchStack(ctx, {
      SIM_LATENCY_MS: String(LATENCY_MS),
      WORKER_CONCURRENCY: '50',
    }).init();
    try {
      await Promise.all([
        ...Array.from({ length: GATEWAYS }, () => stack.spawnGateway()),
        stack.spawnWorker(),
      ]);
      const warm = await stack.follower();
      await warm.follow((await startDeliberation(stack.baseUrl, { question: 'warm-up' })).messageId, 60_000);

      const from = ctx.sampler.cpu();
      ctx.sampler.resetPeaks();
      const connectStarted = Date.now();
      const followers = await mapLimit(
        Array.from({ length: clients }, (_, i) => i),
        50,
        (i) => Follower.connect(stack.gateways[i % GATEWAYS].baseUrl),
      );
      const connectSeconds = (Date.now() - connectStarted) / 1000;
      const ackMs: number[] = [];
      const subscribedAt = new Map<string, number>(); // `${client}:${messageId}` -> when acknowledged
      const started: { messageId: string; acceptedAt: number }[] = [];
      const all: Promise<Followed[]>[] = [];
      try {
        for (let d = 0; d < deliberations; d++) {
          const accepted = await startDeliberation(stack.gateways[d % GATEWAYS].baseUrl, {
            question: `Fan-out question ${d}: what should everyone hear about?`,
          });
          started.push(accepted);
          all.push(
            Promise.all(
              followers.map((f, c) => {
                const asked = Date.now();
                return f.follow(accepted.messageId, 180_000, (at) => {
                  ackMs.push(at - asked);
                  subscribedAt.set(`${c}:${accepted.messageId}`, at);
                });
              }),
            ),
          );
          await sleep(300);
        }
        const received = await Promise.all(all);
        const cpu = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
        const peakRssMb = ctx.sampler.peakRss();

        // What PostgreSQL holds: every client must have exactly these, in order, once each.
        let expectedDeliveries = 0;
        let deliveries = 0;
        let missing = 0;
        let duplicated = 0;
        let outOfOrder = 0;
        let wrongType = 0;
        const lags: number[] = [];
        const eventsPer: number[] = [];
        for (let d = 0; d < started.length; d++) {
          const { messageId } = started[d];
          const stored: { seq: number; type: string }[] = await stack.db.query(
            'SELECT seq, type FROM deliberation_events WHERE message_id = $1 ORDER BY seq',
            [messageId],
          );
          eventsPer.push(stored.length);
          received[d].forEach((followed, c) => {
            expectedDeliveries += stored.length;
            deliveries += followed.received.length;
            const seqs = followed.received.map((r) => r.event.seq);
            const unique = new Set(seqs);
            duplicated += seqs.length - unique.size;
            missing += stored.filter((s) => !unique.has(s.seq)).length;
            for (let i = 1; i < seqs.length; i++) if (seqs[i] <= seqs[i - 1]) outOfOrder += 1;
            for (const r of followed.received) {
              const want = stored[r.event.seq - 1];
              if (!want || want.type !== r.event.type) wrongType += 1;
              // Live delivery lag: events stored after this client's subscription was acknowledged.
              const storedAt = Date.parse(r.event.at);
              if (storedAt >= (subscribedAt.get(`${c}:${messageId}`) ?? Infinity)) lags.push(r.at - storedAt);
            }
          });
        }
        // Nobody here asked for deltas: a live event (model_delta / model_partial) must not reach anyone.
        const unaskedLive = followers.reduce(
          (n, f) =>
            n +
            f.unasked.liveWithoutDeltas +
            (f.unasked.foreign.model_delta ?? 0) +
            (f.unasked.foreign.model_partial ?? 0),
          0,
        );
        const exact =
          missing === 0 && duplicated === 0 && outOfOrder === 0 && wrongType === 0 && unaskedLive === 0;
        const gatewayRss = stack.gateways.map((g) => peakRssMb[g.label] ?? Number.NaN);
        const lag = summary(lags, 0);
        const checks: Check[] = [
          {
            what: `${clients} clients × ${deliberations} deliberations: events received exactly once, in order`,
            target: 'no event missing or duplicated',
            value:
              `${deliveries} of ${expectedDeliveries} deliveries; missing ${missing}, duplicated ${duplicated}, out of order ${outOfOrder}` +
              (unaskedLive > 0 ? `; ${unaskedLive} live events nobody asked for` : ''),
            met: exact,
          },
          ...stack.gateways.map((g, i) => ({
            what: `${g.label} peak RSS`,
            target: `≤ ${RSS_LIMIT_MB} MB`,
            value: `${gatewayRss[i]} MB`,
            met: gatewayRss[i] <= RSS_LIMIT_MB,
          })),
        ];
        const limits: string[] = [];
        if (gatewayRss.some((r) => r > RSS_LIMIT_MB)) {
          limits.push(
            `Gateway memory with ${clients / GATEWAYS} sockets each: ${gatewayRss.join(' / ')} MB. ${describeCpu(cpu)}.`,
          );
        }
        const ack = summary(ackMs, 0);
        const notes = [
          `Subscribing is not free: each \`subscribe\` checks ownership (a query) and replays stored events ` +
            `(another), so ${clients} subscriptions arriving together for each new deliberation queue on each ` +
            `gateway's pool of 10 PostgreSQL connections — acknowledgement p50 ${ack.p50} ms, p95 ${ack.p95} ms. ` +
            `Live events wait behind that catch-up (delivery is ordered per subscription): live delivery lag ` +
            `p50 ${lag.p50} ms, p95 ${lag.p95} ms. With clients already subscribed the lag is that of one Redis ` +
            `PUBLISH and a socket write.`,
          `CPU over the run: ${describeCpu(cpu)}. The ${clients} clients live in the benchmark process, which ` +
            `competes with the gateways for the same two cores.`,
        ];
        return {
          name: 'fan-out',
          title: this.title,
          target: this.target,
          parameters: {
            clients,
            gateways: GATEWAYS,
            clientsPerGateway: clients / GATEWAYS,
            deliberations,
            mode: 'council (3 models + chairman), started 300 ms apart, alternating gateways',
            latencyMs: LATENCY_MS,
            workers: 1,
            workerConcurrency: 50,
          },
          figures: {
            expectedDeliveries,
            deliveries,
            missing,
            duplicated,
            outOfOrder,
            wrongType,
            unaskedLiveEvents: unaskedLive,
            eventsPerDeliberation: eventsPer,
            connectSeconds: round(connectSeconds),
            subscribeAckMs: ack,
            liveDeliveryLagMs: lag,
            gatewayPeakRssMb: gatewayRss,
          },
          checks,
          tables: [
            {
              table: {
                columns: [
                  'clients',
                  'deliberations',
                  'events each',
                  'deliveries expected / received',
                  'missing / duplicated',
                  'subscribe ack p50 / p95 (ms)',
                  'live delivery lag p50 / p95 / max (ms)',
                  'gateway peak RSS (MB)',
                ],
                rows: [
                  [
                    clients,
                    deliberations,
                    [...new Set(eventsPer)].join('/'),
                    `${expectedDeliveries} / ${deliveries}`,
                    `**${missing} / ${duplicated}**`,
                    `${ack.p50} / ${ack.p95}`,
                    `${lag.p50} / ${lag.p95} / ${lag.max}`,
                    `**${gatewayRss.join(' / ')}**`,
                  ],
                ],
              },
            },
          ],
          method: [
            `${clients} Socket.IO clients (websocket transport) connect, half to each of ${GATEWAYS} gateway processes; ${deliberations} council deliberations start 300 ms apart (latency ${LATENCY_MS} ms), and every client subscribes to every one right after its 202 (afterSeq 0: stored events are replayed, later ones arrive live through Redis).`,
            'Each client’s events per deliberation are compared with `deliberation_events` in PostgreSQL: every seq exactly once, in order, with the stored type. Any difference fails the harness (exit code 1).',
            'Live delivery lag = client receive time − the event’s stored `at` (PostgreSQL clock_timestamp()), for events stored after the client’s subscription was acknowledged. Gateway RSS: VmRSS sampled every 200 ms, maximum.',
          ],
          limits,
          notes,
          evidence: { cpu: { 'fan-out': cpu }, peakRssMb: { 'fan-out': peakRssMb } },
          ...(exact
            ? {}
            : {
                error: `fan-out: ${missing} missing, ${duplicated} duplicated, ${outOfOrder} out of order, ${wrongType} of the wrong type, ${unaskedLive} live events unasked`,
              }),
        };
      } finally {
        for (const f of followers) f.close();
      }
    } finally {
      await stack.stop();
    }
  },
};

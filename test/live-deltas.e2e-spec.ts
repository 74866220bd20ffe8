import type { ChildProcess } from 'node:child_process';
import { controlChannel, liveChannel, type DeliveredEvent } from '@conclave/contracts';
import IORedis from 'ioredis';
import { io, type Socket } from 'socket.io-client';
import { LiveHub } from '../apps/gateway/src/events/live-hub';
import { expectContiguous, TestStack } from './support/harness';
import { sleep } from './support/wait';

/** A live event as a client sees it: no seq, no at, no call id. */
interface Piece {
  type: 'model_delta' | 'model_partial';
  messageId: string;
  stage: string;
  participant: string | number;
  model: string | null;
  text: string;
  offset?: number;
}

const isLive = (e: { type: string }): boolean => e.type === 'model_delta' || e.type === 'model_partial';
const live = (events: DeliveredEvent[]): Piece[] => events.filter(isLive) as unknown as Piece[];
const stored = (events: DeliveredEvent[]): DeliveredEvent[] => events.filter((e) => !isLive(e));
const callOf = (e: { type: string; stage?: unknown; participant?: unknown }): string =>
  `${String(e.stage)}|${String(e.participant)}`;

/** Pieces a worker writes per second at most, per call (DELTA_INTERVAL_MS = 50). */
const PER_SECOND = 20;

/**
 * Rebuilds every call's answer from its live pieces (a partial starts it, each delta continues it
 * at its offset, with no gap and no overlap) and checks it against the stored answer of each
 * `succeeded` model_progress after seq `from` (earlier ones settled before the client watched).
 * Returns how many calls were checked.
 */
function expectDeltasMatchStored(events: DeliveredEvent[], messageId: string, from = 0): number {
  const texts = new Map<string, string>();
  const counts = new Map<string, number>();
  /** Each call's text when its `succeeded` event arrived: all of it must have come by then. */
  const atSettle = new Map<string, string | undefined>();
  for (const event of events) {
    if (!isLive(event)) {
      if (event.type === 'model_progress' && event.state === 'succeeded' && event.seq > from) {
        atSettle.set(callOf(event), texts.get(callOf(event)));
      }
      continue;
    }
    const piece = event as unknown as Piece;
    expect(piece.messageId).toBe(messageId);
    expect(piece).not.toHaveProperty('seq');
    expect(piece).not.toHaveProperty('at');
    expect(piece).not.toHaveProperty('call');
    const key = callOf(piece);
    // Nothing of a call after the event that closes it.
    expect({ call: key, after: atSettle.has(key) }).toEqual({ call: key, after: false });
    const text = texts.get(key);
    if (piece.type === 'model_partial') {
      // Once, and only before anything else of the call.
      expect(text).toBeUndefined();
      expect(piece).not.toHaveProperty('offset');
      texts.set(key, piece.text);
    } else {
      expect(piece.offset).toBe(text?.length ?? 0);
      expect(piece.text.length).toBeGreaterThan(0);
      texts.set(key, (text ?? '') + piece.text);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  const succeeded = events.filter((e) => e.type === 'model_progress' && e.state === 'succeeded');
  const checked = succeeded.filter((e) => e.seq > from);
  expect(checked.length).toBeGreaterThan(0);
  for (const event of checked) {
    const key = callOf(event);
    expect({ call: key, text: atSettle.get(key) }).toEqual({ call: key, text: event.content });
    // Coalesced: about 20 a second at most (the call's time, plus the last one sent as it ends).
    const ms = Number(event.responseTimeMs);
    expect(counts.get(key) ?? 0).toBeLessThanOrEqual(Math.ceil((ms / 1000) * PER_SECOND) + 2);
  }
  // Nothing streamed for a call that is not stored as succeeded (title calls are silent).
  const calls = new Set(succeeded.map(callOf));
  for (const key of texts.keys()) expect(calls).toContain(key);
  return checked.length;
}

/** An SSE stream read as blocks: each with its event name, id line (if any) and data. */
async function readSse(
  url: string,
  until: (block: { event: string }) => boolean,
): Promise<{ event: string; id: string | null; data: Record<string, unknown> }[]> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  if (!response.body) throw new Error('no body');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const blocks: { event: string; id: string | null; data: Record<string, unknown> }[] = [];
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    let end = text.indexOf('\n\n');
    while (end >= 0) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      end = text.indexOf('\n\n');
      const event = /^event: (.*)$/m.exec(block)?.[1];
      if (!event) continue;
      const id = /^id: (.*)$/m.exec(block)?.[1] ?? null;
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>;
      blocks.push({ event, id, data });
      if (until({ event })) {
        await reader.cancel();
        return blocks;
      }
    }
  }
  return blocks;
}

describe('live deltas (model_delta / model_partial)', () => {
  // Calls take 200-600 ms, written in up to 60 pieces: several pieces per 50 ms coalesce.
  const stack = new TestStack({ SIM_LATENCY_MS: '400', SIM_STREAM_PIECES: '60' });
  beforeAll(async () => {
    await stack.start();
    // Two workers: a deliberation's stages land on either, so later stages need the re-announced watch.
    await stack.startWorker();
  }, 60_000);
  afterAll(() => stack.stop());

  const BODIES: Record<string, Record<string, unknown>> = {
    council: {
      question: 'Is a monorepo right for a small team?',
      councilModels: ['sim/a', 'sim/b', 'sim/c'],
    },
    vote: {
      question: 'Which database?',
      mode: 'vote',
      modeConfig: { models: ['sim/a:voteA', 'sim/b:voteA', 'sim/c:voteB'] },
    },
    jury: {
      question: 'Evaluate this',
      mode: 'jury',
      modeConfig: {
        content: 'GET /api/users returns users.',
        jurorModels: ['sim/j1:good', 'sim/j2:fair', 'sim/j3:good'],
        foremanModel: 'sim/foreman',
      },
    },
    debate: {
      question: 'Should companies adopt a 4-day work week?',
      mode: 'debate',
      modeConfig: { models: ['sim/a:revise:voteB', 'sim/b:stand:voteA', 'sim/c:merge:voteA'] },
    },
    delphi: {
      question: 'How many software engineers will be employed globally by 2030?',
      mode: 'delphi',
      modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f', maxRounds: 2 },
    },
  };

  it('every mode: deltas rebuild each stored answer exactly; a subscriber without deltas gets none', async () => {
    const runs = await Promise.all(
      Object.entries(BODIES).map(async ([mode, body]) => {
        // Connected before the deliberation starts, as a web client is: subscribing is then one
        // round trip after the 202.
        const [forDeltas, forStored] = [await stack.connect(), await stack.connect()];
        const { messageId } = await stack.deliberate(body);
        const [watched, plain] = await Promise.all([
          stack.follow(messageId, { deltas: true, socket: forDeltas }),
          stack.follow(messageId, { socket: forStored }),
        ]);
        forDeltas.disconnect();
        forStored.disconnect();
        return { mode, messageId, watched, plain };
      }),
    );
    for (const { mode, messageId, watched, plain } of runs) {
      expect({ mode, last: watched.at(-1)?.type }).toEqual({ mode, last: 'complete' });
      expectContiguous(stored(watched));
      expect(stored(watched)).toEqual(plain);
      expect(live(plain)).toEqual([]);
      expect(live(watched).length).toBeGreaterThan(0);
      // A call (200-600 ms) can settle before the watch reaches the worker on a busy machine: it
      // has nothing to stream, and its succeeded event comes before the first live piece. Every
      // call that settles after that piece must be rebuilt whole.
      const firstLive = watched.findIndex(isLive);
      const settledBefore = watched
        .slice(0, firstLive)
        .filter((e) => e.type === 'model_progress' && e.state === 'succeeded')
        .map((e) => e.seq);
      expect(expectDeltasMatchStored(watched, messageId, Math.max(0, ...settledBefore))).toBeGreaterThan(1);
    }
    // Delphi keeps its panelists anonymous: numbered, no model.
    const delphi = live(runs.find((r) => r.mode === 'delphi')?.watched ?? []);
    const panel = delphi.filter((p) => typeof p.participant === 'number');
    expect(panel.length).toBeGreaterThan(0);
    for (const piece of panel) expect(piece.model).toBeNull();
    // Elsewhere the participant is the model.
    for (const piece of live(runs[0].watched)) expect(piece.model).toBe(piece.participant);
    // Every watch ended with its subscription: no channel stays subscribed.
    expect(stack.app?.get(LiveHub).watching).toEqual({ messages: 0, watchers: 0 });
    const probe = new IORedis(stack.config.redisUrl);
    const channels = await probe.pubsub('CHANNELS', `${stack.config.redisPrefix}:live:*`);
    probe.disconnect();
    expect(channels).toEqual([]);
  }, 40_000);

  it('a deliberation nobody watches for deltas costs no subscription and no watch', async () => {
    const heard: string[] = [];
    const control = new IORedis(stack.config.redisUrl);
    const probe = new IORedis(stack.config.redisUrl);
    try {
      control.on('message', (_channel: string, raw: string) => heard.push(raw));
      await control.subscribe(controlChannel(stack.config.redisPrefix));
      const { messageId } = await stack.deliberate(BODIES.council);
      const channel = liveChannel(stack.config.redisPrefix, messageId);
      let subscribers = 0;
      const sampling = setInterval(() => {
        void probe.pubsub('NUMSUB', channel).then((answer) => {
          subscribers = Math.max(subscribers, Number((answer as [string, number])[1]));
        });
      }, 50);
      const events = await stack.follow(messageId);
      clearInterval(sampling);
      expect(events.at(-1)?.type).toBe('complete');
      expect(live(events)).toEqual([]);
      expect(subscribers).toBe(0);
      expect(heard.filter((raw) => raw.includes(messageId))).toEqual([]);
    } finally {
      control.disconnect();
      probe.disconnect();
    }
  });

  it('a client that reconnects mid-call gets the missed events, then the answer so far once, then deltas', async () => {
    const { messageId } = await stack.deliberate({
      question: 'Reconnect',
      councilModels: ['sim/long:delay2000@answer', 'sim/short:delay900@answer'],
      chairmanModel: 'sim/c',
    });
    const long = 'stage1|sim/long:delay2000@answer';
    const first = await stack.connect();
    const seen: DeliveredEvent[] = [];
    let longText = 0;
    const partWay = new Promise<void>((resolve) => {
      first.onAny((_name: string, event: DeliveredEvent) => {
        if (event.messageId !== messageId) return;
        seen.push(event);
        if (isLive(event) && callOf(event) === long) longText += String(event.text).length;
        if (longText > 0 && seen.some((e) => e.type === 'stage1_start')) resolve();
      });
    });
    expect(await first.emitWithAck('subscribe', { messageId, deltas: true })).toEqual({ ok: true });
    await partWay;
    first.disconnect();
    const lastSeq = Math.max(...stored(seen).map((e) => e.seq));
    // The short call settles while the client is away (the long one runs on).
    let storedNow = 0;
    for (let settled = false; !settled; await sleep(25)) {
      const rows = (await stack.db.query(
        `SELECT max(seq)::int AS "storedNow", bool_or(payload->>'state' = 'succeeded') AS settled
           FROM deliberation_events WHERE message_id = $1`,
        [messageId],
      )) as { storedNow: number; settled: boolean | null }[];
      storedNow = rows[0].storedNow;
      settled = rows[0].settled === true;
    }
    expect(storedNow).toBeGreaterThan(lastSeq);

    const again = await stack.follow(messageId, { afterSeq: lastSeq, deltas: true });
    expect(again.at(-1)?.type).toBe('complete');
    expectContiguous(stored(again), lastSeq + 1);
    const pieces = live(again).filter((p) => callOf(p) === long);
    // One partial (the answer so far, part of it), then deltas that follow on from it.
    expect(pieces[0].type).toBe('model_partial');
    expect(pieces.filter((p) => p.type === 'model_partial')).toHaveLength(1);
    const content = String(again.find((e) => callOf(e) === long && e.state === 'succeeded')?.content);
    expect(pieces[0].text.length).toBeGreaterThanOrEqual(longText);
    expect(pieces[0].text.length).toBeLessThan(content.length);
    expect(pieces.slice(1).every((p) => p.type === 'model_delta')).toBe(true);
    // The events stored before it resubscribed all came first.
    const partialAt = again.findIndex((e) => e.type === 'model_partial');
    const missed = again.filter((e) => !isLive(e) && e.seq <= storedNow);
    expect(missed.length).toBeGreaterThan(0);
    for (const event of missed) expect(again.indexOf(event)).toBeLessThan(partialAt);
    // No gap: what it rebuilds is the stored answer.
    expect(expectDeltasMatchStored(again, messageId, storedNow)).toBeGreaterThan(1);
    expect(again.some((e) => callOf(e) === long && e.state === 'succeeded' && e.seq > storedNow)).toBe(true);
  }, 30_000);

  describe('across two gateways', () => {
    let second: { child: ChildProcess; baseUrl: string };
    const sockets: Socket[] = [];
    beforeAll(async () => {
      second = await stack.spawnGateway();
    }, 60_000);
    afterAll(() => {
      for (const socket of sockets) socket.disconnect();
    });

    const connectTo = async (baseUrl: string): Promise<Socket> => {
      const socket = io(`${baseUrl}/deliberations`, { transports: ['websocket'], reconnection: false });
      sockets.push(socket);
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('connect_error', (error) => reject(error));
      });
      return socket;
    };
    /** Everything a socket receives, whatever its message. */
    const record = (socket: Socket): DeliveredEvent[] => {
      const all: DeliveredEvent[] = [];
      socket.onAny((_name: string, event: DeliveredEvent) => all.push(event));
      return all;
    };

    it('each client gets every delta of its deliberation and none of another', async () => {
      const [a, b] = await Promise.all([
        stack.deliberate({ question: 'First', councilModels: ['sim/a', 'sim/b'] }),
        stack.deliberate({ question: 'Second', councilModels: ['sim/c', 'sim/d'] }),
      ]);
      const one = await connectTo(stack.baseUrl);
      const two = await connectTo(second.baseUrl);
      const three = await connectTo(second.baseUrl);
      const heard = [record(one), record(two), record(three)];
      const [onA, onB, onAElsewhere] = await Promise.all([
        stack.follow(a.messageId, { socket: one, deltas: true }),
        stack.follow(b.messageId, { socket: two, deltas: true }),
        stack.follow(a.messageId, { socket: three, deltas: true }),
      ]);
      expect(expectDeltasMatchStored(onA, a.messageId)).toBeGreaterThan(2);
      expect(expectDeltasMatchStored(onB, b.messageId)).toBeGreaterThan(2);
      expect(expectDeltasMatchStored(onAElsewhere, a.messageId)).toBeGreaterThan(2);
      expect(live(heard[0]).every((p) => p.messageId === a.messageId)).toBe(true);
      expect(live(heard[1]).every((p) => p.messageId === b.messageId)).toBe(true);
      expect(live(heard[2]).every((p) => p.messageId === a.messageId)).toBe(true);
    }, 30_000);
  });

  it('SSE with ?deltas=1: model_delta blocks have no id; stored events keep theirs', async () => {
    const { messageId } = await stack.deliberate(BODIES.council);
    const blocks = await readSse(
      `${stack.baseUrl}/api/deliberations/${messageId}/events?deltas=1`,
      (block) => block.event === 'complete',
    );
    const deltas = blocks.filter((b) => isLive({ type: b.event }));
    expect(deltas.length).toBeGreaterThan(0);
    for (const block of deltas) {
      expect(block.id).toBeNull();
      expect(block.data.type).toBe(block.event);
    }
    const events = blocks.filter((b) => !isLive({ type: b.event }));
    for (const block of events) expect(block.id).toBe(String(block.data.seq));
    const asEvents = blocks.map((b) => b.data) as unknown as DeliveredEvent[];
    expect(expectDeltasMatchStored(asEvents, messageId)).toBeGreaterThan(2);
    // Without asking: none.
    const plain = await readSse(
      `${stack.baseUrl}/api/deliberations/${messageId}/events`,
      (b) => b.event === 'complete',
    );
    expect(plain.filter((b) => isLive({ type: b.event }))).toEqual([]);
    const refused = await stack.api('GET', `/api/deliberations/${messageId}/events?deltas=maybe`);
    expect(refused.status).toBe(400);
  });

  it('refuses a deltas flag that is not a boolean', async () => {
    const { messageId } = await stack.deliberate(BODIES.council);
    const socket = await stack.connect();
    const ack = (await socket.emitWithAck('subscribe', { messageId, deltas: 'yes' })) as {
      error?: { fields?: Record<string, string> };
    };
    expect(Object.keys(ack.error?.fields ?? {})).toEqual(['deltas']);
    socket.disconnect();
  });
});

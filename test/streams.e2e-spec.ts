import { once } from 'node:events';
import { connect as tcpConnect, type Socket as TcpSocket } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { loadConfig } from '@conclave/config';
import type { DeliveredEvent } from '@conclave/contracts';
import { io, type Socket } from 'socket.io-client';
import { DataSource } from 'typeorm';
import { createGateway } from '../apps/gateway/src/app';
import { DeliberationsService } from '../apps/gateway/src/deliberations/deliberations.service';
import { EventHub } from '../apps/gateway/src/events/event-hub';
import { TestStack } from './support/harness';
import { eventually, sleep } from './support/wait';

/**
 * Live connections (Socket.IO sockets and SSE streams): what a revoked key, a greedy key and a
 * client that stops reading can do to a gateway. Real PostgreSQL, Redis and Socket.IO throughout.
 */

/** Another gateway replica in this process, on the same PostgreSQL and Redis (and any other settings). */
async function gateway(env: Record<string, string>): Promise<{ app: INestApplication; baseUrl: string }> {
  const app = await createGateway(loadConfig(env), { logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, baseUrl: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
}

const openSockets: Socket[] = [];
const openStreams: AbortController[] = [];

afterAll(() => {
  for (const socket of openSockets) socket.disconnect();
  for (const abort of openStreams) abort.abort();
});

function connect(baseUrl: string, token: string): Promise<Socket> {
  const socket = io(`${baseUrl}/deliberations`, {
    transports: ['websocket'],
    auth: { token },
    reconnection: false,
  });
  openSockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', (error) => reject(error));
  });
}

interface Watched {
  socket: Socket;
  events: DeliveredEvent[];
  closedAt: number | null;
  reason: string | null;
}

function watch(socket: Socket): Watched {
  const watched: Watched = { socket, events: [], closedAt: null, reason: null };
  socket.onAny((_name: string, event: DeliveredEvent) => watched.events.push(event));
  socket.on('disconnect', (reason) => {
    watched.closedAt = Date.now();
    watched.reason = reason;
  });
  return watched;
}

interface Stream {
  status: number;
  /** The `event:` names received so far. */
  events: string[];
  closedAt: number | null;
  abort: () => void;
}

/**
 * An SSE stream read as it arrives, opened with the key in the Authorization header or, as
 * EventSource does, with a ticket asked for with the key (from `ticketFrom`, another gateway maybe).
 */
async function openSse(
  baseUrl: string,
  messageId: string,
  token: string,
  options: { ticketFrom?: string } = {},
): Promise<Stream> {
  const abort = new AbortController();
  openStreams.push(abort);
  let url = `${baseUrl}/api/deliberations/${messageId}/events`;
  let headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (options.ticketFrom !== undefined) {
    const issued = await fetch(`${options.ticketFrom}/api/deliberations/${messageId}/events/ticket`, {
      method: 'POST',
      headers,
    });
    expect(issued.status).toBe(200);
    url += `?ticket=${((await issued.json()) as { ticket: string }).ticket}`;
    headers = {};
  }
  const response = await fetch(url, { headers, signal: abort.signal });
  const stream: Stream = { status: response.status, events: [], closedAt: null, abort: () => abort.abort() };
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    return stream;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    let text = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        let end = text.indexOf('\n\n');
        while (end >= 0) {
          const name = /^event: (.*)$/m.exec(text.slice(0, end))?.[1];
          if (name) stream.events.push(name);
          text = text.slice(end + 2);
          end = text.indexOf('\n\n');
        }
      }
    } catch {
      // aborted by the test
    }
    stream.closedAt = Date.now();
  })();
  return stream;
}

/**
 * Three slow stages: a deliberation that runs for about fifteen seconds, so that the other key's
 * run is still going once `user:revoke-key` (which now also cancels the key's work, and loads the
 * stage store for it) has exited.
 */
const SLOW = {
  councilModels: ['sim/a:delay5000', 'sim/b:delay5000'],
  chairmanModel: 'sim/c:delay5000',
};

describe('revoking a key closes its open sockets and SSE streams on every gateway', () => {
  // A recheck far away: what closes the streams in the first test is the revocation message.
  const stack = new TestStack({ AUTH_MODE: 'apikey', STREAM_KEY_RECHECK_MS: '600000' });
  let second: { app: INestApplication; baseUrl: string };

  beforeAll(async () => {
    await stack.start();
    second = await gateway(stack.env);
  }, 60_000);
  afterAll(async () => {
    await second?.app.close();
    await stack.stop();
  });

  it('closes them within a second of `user:revoke-key`, and the stream of another key goes on', async () => {
    const leaver = await stack.createUser('leaver');
    const stayer = await stack.createUser('stayer');
    const mine = await stack.deliberate({ question: 'A slow one', ...SLOW }, leaver);
    const theirs = await stack.deliberate({ question: 'Another slow one', ...SLOW }, stayer);

    // The leaver's socket on the first gateway, its SSE stream on the second; the stayer's the other way.
    const socket = watch(await connect(stack.baseUrl, leaver));
    expect(await socket.socket.emitWithAck('subscribe', { messageId: mine.messageId })).toEqual({ ok: true });
    const sse = await openSse(second.baseUrl, mine.messageId, leaver);
    expect(sse.status).toBe(200);
    const otherSocket = watch(await connect(second.baseUrl, stayer));
    expect(await otherSocket.socket.emitWithAck('subscribe', { messageId: theirs.messageId })).toEqual({
      ok: true,
    });
    const otherSse = await openSse(stack.baseUrl, theirs.messageId, stayer);
    expect(
      await eventually(
        () =>
          socket.events.length > 0 &&
          sse.events.length > 0 &&
          otherSocket.events.length > 0 &&
          otherSse.events.length > 0,
        10_000,
      ),
    ).toBe(true);

    const revoked = await stack.revokeKey(leaver.slice(0, 8));
    const exitedAt = Date.now();
    expect(revoked.stdout).toMatch(/revoked 1 key/);
    expect(await eventually(() => socket.closedAt !== null && sse.closedAt !== null, 1000)).toBe(true);
    expect(socket.reason).toBe('io server disconnect');
    expect(Math.max(socket.closedAt ?? Infinity, sse.closedAt ?? Infinity)).toBeLessThanOrEqual(
      exitedAt + 1000,
    );
    // Closed mid-run, not at the end of the deliberation; nothing arrives afterwards.
    expect(socket.events.map((e) => e.type)).not.toContain('complete');
    expect(sse.events).not.toContain('complete');
    const seen = { socket: socket.events.length, sse: sse.events.length };
    const otherSeen = otherSocket.events.length + otherSse.events.length;
    expect(otherSocket.closedAt).toBeNull();
    expect(otherSse.closedAt).toBeNull();
    // The stayer's streams keep receiving events.
    expect(
      await eventually(() => otherSocket.events.length + otherSse.events.length > otherSeen + 1, 8000),
    ).toBe(true);
    expect({ socket: socket.events.length, sse: sse.events.length }).toEqual(seen);
    expect(otherSocket.closedAt).toBeNull();
    expect(otherSse.closedAt).toBeNull();
    // The revoked key opens nothing new.
    await expect(connect(second.baseUrl, leaver)).rejects.toThrow(/unauthorized/);
    expect((await openSse(stack.baseUrl, mine.messageId, leaver)).status).toBe(401);
  }, 40_000);

  it('closes a stream opened by ticket (EventSource) when the key that asked for the ticket is revoked', async () => {
    // Two keys of one user: the run is the first key's (revoking the second cancels none of it).
    const runner = await stack.createUser('viewer');
    const viewer = await stack.createUser('viewer');
    const run = await stack.deliberate({ question: 'Watched by ticket', ...SLOW }, runner);
    // Ticket asked for on the second gateway, redeemed on the first.
    const ticketed = await openSse(stack.baseUrl, run.messageId, viewer, { ticketFrom: second.baseUrl });
    expect(ticketed.status).toBe(200);
    const byHeader = await openSse(stack.baseUrl, run.messageId, runner);
    expect(await eventually(() => ticketed.events.length > 0 && byHeader.events.length > 0, 10_000)).toBe(
      true,
    );

    const revoked = await stack.revokeKey(viewer.slice(0, 8));
    const exitedAt = Date.now();
    expect(revoked.stdout).toMatch(/revoked 1 key/);
    expect(await eventually(() => ticketed.closedAt !== null, 1000)).toBe(true);
    expect(ticketed.closedAt!).toBeLessThanOrEqual(exitedAt + 1000);
    expect(ticketed.events).not.toContain('complete');
    // The run and the other key's stream go on; the revoked key gets no new ticket.
    const seen = byHeader.events.length;
    expect(await eventually(() => byHeader.events.length > seen, 8000)).toBe(true);
    expect(byHeader.closedAt).toBeNull();
    const refused = await fetch(`${stack.baseUrl}/api/deliberations/${run.messageId}/events/ticket`, {
      method: 'POST',
      headers: { authorization: `Bearer ${viewer}` },
    });
    expect(refused.status).toBe(401);
  }, 40_000);

  it('closes them within the recheck interval when the CLI cannot reach Redis', async () => {
    const third = await gateway({ ...stack.env, STREAM_KEY_RECHECK_MS: '500' });
    try {
      const key = await stack.createUser('offline');
      const { messageId } = await stack.deliberate({ question: 'Slow again', ...SLOW }, key);
      const socket = watch(await connect(third.baseUrl, key));
      expect(await socket.socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });
      const sse = await openSse(third.baseUrl, messageId, key);
      expect(sse.status).toBe(200);
      expect(await eventually(() => socket.events.length > 0 && sse.events.length > 0, 10_000)).toBe(true);

      const revoked = await stack.revokeKey(key.slice(0, 8), { REDIS_URL: 'redis://127.0.0.1:1' });
      const exitedAt = Date.now();
      // The revocation stands in PostgreSQL even though no gateway was told.
      expect(revoked.stdout).toMatch(/revoked 1 key/);
      expect(await eventually(() => socket.closedAt !== null && sse.closedAt !== null, 1500)).toBe(true);
      expect(Math.max(socket.closedAt ?? Infinity, sse.closedAt ?? Infinity)).toBeLessThanOrEqual(
        exitedAt + 1500,
      );
      expect(socket.events.map((e) => e.type)).not.toContain('complete');
      expect(sse.events).not.toContain('complete');
    } finally {
      await third.app.close();
    }
  }, 40_000);
});

describe('caps, rate limits and slow consumers on live connections', () => {
  // No worker: deliberations stay queued, so their subscriptions stay open and idle.
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    MAX_SOCKETS_PER_USER: '3',
    MAX_SSE_STREAMS_PER_USER: '2',
    MAX_SUBSCRIPTIONS_PER_USER: '4',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  });
  const extra: INestApplication[] = [];

  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(async () => {
    for (const app of extra) await app.close();
    await stack.stop();
  });

  const replica = async (env: Record<string, string>) => {
    const started = await gateway({ ...stack.env, ...env });
    extra.push(started.app);
    return started;
  };

  const deliberations = async (token: string, n: number, baseUrl = stack.baseUrl) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const response = await fetch(`${baseUrl}/api/deliberations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ question: `Question ${i}`, councilModels: ['sim/a', 'sim/b'] }),
      });
      expect(response.status).toBe(202);
      ids.push(((await response.json()) as { messageId: string }).messageId);
    }
    return ids;
  };

  it('refuses a socket over MAX_SOCKETS_PER_USER in the handshake, naming the limit', async () => {
    const key = await stack.createUser('many-sockets');
    const sockets: Socket[] = [];
    for (let i = 0; i < 3; i++) sockets.push(await connect(stack.baseUrl, key));
    await expect(connect(stack.baseUrl, key)).rejects.toThrow(/at most 3 .*MAX_SOCKETS_PER_USER/);
    // Another user is not affected, and a closed socket frees its place.
    await connect(stack.baseUrl, await stack.createUser('few-sockets'));
    sockets[0].disconnect();
    let reopened = false;
    for (let i = 0; i < 20 && !reopened; i++) {
      await sleep(50);
      reopened = await connect(stack.baseUrl, key).then(
        () => true,
        () => false,
      );
    }
    expect(reopened).toBe(true);
  });

  it('answers 429 to an SSE stream over MAX_SSE_STREAMS_PER_USER, naming the limit', async () => {
    const key = await stack.createUser('many-streams');
    const [messageId] = await deliberations(key, 1);
    const first = await openSse(stack.baseUrl, messageId, key);
    const second = await openSse(stack.baseUrl, messageId, key);
    expect([first.status, second.status]).toEqual([200, 200]);
    const refused = await fetch(`${stack.baseUrl}/api/deliberations/${messageId}/events`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({
      statusCode: 429,
      message: expect.stringMatching(/at most 2 .*MAX_SSE_STREAMS_PER_USER/),
    });
    first.abort();
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) {
      await sleep(50);
      const again = await openSse(stack.baseUrl, messageId, key);
      status = again.status;
    }
    expect(status).toBe(200);
  });

  it('refuses a subscription over MAX_SUBSCRIPTIONS_PER_USER, counted over all of the user’s sockets and streams', async () => {
    const key = await stack.createUser('many-subscriptions');
    const ids = await deliberations(key, 5);
    const [a, b] = [await connect(stack.baseUrl, key), await connect(stack.baseUrl, key)];
    for (const [socket, messageId] of [
      [a, ids[0]],
      [a, ids[1]],
      [b, ids[2]],
      [b, ids[3]],
    ] as const) {
      expect(await socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });
    }
    const refused = (await b.emitWithAck('subscribe', { messageId: ids[4] })) as {
      error?: { message: string; statusCode?: number };
    };
    expect(refused.error).toMatchObject({
      statusCode: 429,
      message: expect.stringMatching(/at most 4 .*MAX_SUBSCRIPTIONS_PER_USER/),
    });
    // An SSE stream is a subscription too.
    expect((await openSse(stack.baseUrl, ids[4], key)).status).toBe(429);
    // Subscribing again to the same message replaces the subscription; unsubscribing frees a place.
    expect(await a.emitWithAck('subscribe', { messageId: ids[0], afterSeq: 0 })).toEqual({ ok: true });
    expect(await a.emitWithAck('unsubscribe', { messageId: ids[1] })).toEqual({ ok: true });
    expect(await b.emitWithAck('subscribe', { messageId: ids[4] })).toEqual({ ok: true });
  });

  it('says when to retry on every cap refusal of a socket, as the rate limit’s refusal does', async () => {
    const key = await stack.createUser('capped-with-hint');
    const [messageId, ...rest] = await deliberations(key, 5);
    const batch = await fetch(`${stack.baseUrl}/api/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ defaults: { councilModels: ['sim/a', 'sim/b'] }, items: [{ question: 'Q?' }] }),
    });
    expect(batch.status).toBe(202);
    const { batchId } = (await batch.json()) as { batchId: string };
    const sockets: Socket[] = [];
    for (let i = 0; i < 3; i++) sockets.push(await connect(stack.baseUrl, key));
    // The handshake over MAX_SOCKETS_PER_USER: the connect_error's data, as a rate-limited handshake's.
    const refused = (await connect(stack.baseUrl, key).then(
      () => null,
      (error: unknown) => error,
    )) as { message: string; data?: unknown } | null;
    expect(refused?.message).toMatch(/MAX_SOCKETS_PER_USER/);
    expect(refused?.data).toEqual({ statusCode: 429, retryAfterSeconds: 5 });
    // A subscription over MAX_SUBSCRIPTIONS_PER_USER, to a deliberation and to a batch.
    for (const id of [messageId, ...rest.slice(0, 3)]) {
      expect(await sockets[0].emitWithAck('subscribe', { messageId: id })).toEqual({ ok: true });
    }
    for (const payload of [{ messageId: rest[3] }, { batchId }]) {
      const ack = (await sockets[1].emitWithAck('subscribe', payload)) as { error?: unknown };
      expect(ack.error).toEqual({
        message: expect.stringMatching(/MAX_SUBSCRIPTIONS_PER_USER/),
        statusCode: 429,
        retryAfterSeconds: 5,
      });
    }
  });

  it('rate-limits socket messages with the same per-key budget as HTTP requests', async () => {
    const limited = await replica({ RATE_LIMIT_REQUESTS_PER_MINUTE: '10' });
    const key = await stack.createUser('chatty');
    const socket = await connect(limited.baseUrl, key);
    const acks: {
      ok?: true;
      error?: { message: string; statusCode?: number; retryAfterSeconds?: number };
    }[] = [];
    for (let i = 0; i < 25; i++) acks.push(await socket.emitWithAck('unsubscribe', { messageId: 'x' }));
    // 26 requests (the handshake and 25 messages) against 10 a minute: even a count that straddles a
    // minute boundary refuses at least 6.
    const refused = acks.filter((ack) => ack.error);
    expect(refused.length).toBeGreaterThanOrEqual(6);
    for (const ack of refused) {
      expect(ack.error).toMatchObject({
        statusCode: 429,
        message: expect.stringMatching(/too many requests/i),
        retryAfterSeconds: expect.any(Number),
      });
    }
    expect(socket.connected).toBe(true);
  });

  it('re-syncs N idle subscriptions with one query, and fetches events only for those that are behind', async () => {
    const roomy = await replica({ MAX_SOCKETS_PER_USER: '0', MAX_SUBSCRIPTIONS_PER_USER: '0' });
    const key = await stack.createUser('idle');
    const ids = await deliberations(key, 20, roomy.baseUrl);
    const sockets: Watched[] = [];
    for (let i = 0; i < 3; i++) {
      const socket = watch(await connect(roomy.baseUrl, key));
      for (const messageId of ids) {
        expect(await socket.socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });
      }
      sockets.push(socket);
    }
    await sleep(300); // every replay done
    const hub = roomy.app.get(EventHub);
    const fetches = jest.spyOn(roomy.app.get(DeliberationsService), 'replayAfter');
    const queries = jest.spyOn(roomy.app.get(DataSource), 'query');
    try {
      await hub.resyncAll();
      await sleep(300);
      expect(fetches).toHaveBeenCalledTimes(0);
      expect(queries.mock.calls.length).toBeLessThanOrEqual(1);

      // A publish that was lost: the event is stored, nobody heard of it. The next re-sync fetches it
      // for that message's three subscribers only.
      await stack.db.query(
        `WITH e AS (INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
           SELECT $1, created_at, 1, 'lost', 'model_progress', '{"stage":"stage1","participant":"sim/a","state":"started"}'
           FROM messages WHERE id = $1
           RETURNING 1)
         UPDATE messages SET last_seq = 1 WHERE id = $1`,
        [ids[7]],
      );
      queries.mockClear();
      await hub.resyncAll();
      expect(await eventually(() => sockets.every((s) => s.events.length === 1), 2000)).toBe(true);
      expect(fetches).toHaveBeenCalledTimes(3);
      expect(fetches.mock.calls.every(([messageId]) => messageId === ids[7])).toBe(true);
      expect(queries.mock.calls.length).toBeLessThanOrEqual(1);
      expect(sockets.map((s) => s.events[0])).toEqual(
        Array(3).fill(expect.objectContaining({ messageId: ids[7], seq: 1, type: 'model_progress' })),
      );
    } finally {
      fetches.mockRestore();
      queries.mockRestore();
    }
  });

  describe('a client that stops reading', () => {
    const EVENTS = 2000;
    let slow: { app: INestApplication; baseUrl: string };
    let key = '';
    let messageId = '';

    beforeAll(async () => {
      slow = await replica({ STREAM_DRAIN_TIMEOUT_MS: '1000' });
      key = await stack.createUser('reader');
      [messageId] = await deliberations(key, 1);
      // About 4 MB of stored events to replay.
      await stack.db.query(
        `WITH e AS (
           INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload)
           SELECT $1, m.created_at, g, 'bulk-' || g, 'model_progress',
             jsonb_build_object('stage', 'stage1', 'participant', 'sim/a', 'state', 'started', 'padding', repeat('x', 2000))
           FROM messages m CROSS JOIN generate_series(1, $2::int) g WHERE m.id = $1 RETURNING 1)
         UPDATE messages SET last_seq = $2 WHERE id = $1`,
        [messageId, EVENTS],
      );
    });

    /** Reads what is left once the client starts reading again; `ended` says whether the server had closed. */
    const drain = (tcp: TcpSocket, timeoutMs: number) =>
      new Promise<{ text: string; ended: boolean }>((resolve) => {
        let text = '';
        const timer = setTimeout(() => {
          tcp.destroy();
          resolve({ text, ended: false });
        }, timeoutMs);
        tcp.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
        tcp.once('close', () => {
          clearTimeout(timer);
          resolve({ text, ended: true });
        });
        tcp.resume();
      });

    it('closes an SSE stream that has not drained within STREAM_DRAIN_TIMEOUT_MS', async () => {
      const port = Number(new URL(slow.baseUrl).port);
      const tcp = tcpConnect(port, '127.0.0.1');
      await once(tcp, 'connect');
      tcp.pause();
      tcp.write(
        `GET /api/deliberations/${messageId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      );
      await sleep(3000);
      const { text, ended } = await drain(tcp, 5000);
      expect(text).toMatch(/^HTTP\/1.1 200/);
      expect(ended).toBe(true);
      expect(text.split('\nevent: ').length - 1).toBeLessThan(EVENTS);
    }, 20_000);

    it('closes a socket that has not read its events within STREAM_DRAIN_TIMEOUT_MS', async () => {
      const socket = watch(await connect(slow.baseUrl, key));
      const transport = socket.socket.io.engine.transport as unknown as { ws?: { _socket?: TcpSocket } };
      const tcp = transport.ws?._socket;
      expect(tcp).toBeDefined();
      tcp?.pause();
      socket.socket.emit('subscribe', { messageId });
      await sleep(3000);
      tcp?.resume();
      expect(await eventually(() => socket.closedAt !== null, 5000)).toBe(true);
      expect(socket.events.length).toBeLessThan(EVENTS);
    }, 20_000);

    it('keeps a client that reads: it gets every event of the same replay and stays open', async () => {
      const sse = await openSse(slow.baseUrl, messageId, key);
      const socket = watch(await connect(slow.baseUrl, key));
      expect(await socket.socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });
      expect(
        await eventually(() => sse.events.length === EVENTS && socket.events.length === EVENTS, 15_000),
      ).toBe(true);
      await sleep(1500);
      expect(sse.closedAt).toBeNull();
      expect(socket.closedAt).toBeNull();
      sse.abort();
    }, 30_000);
  });
});

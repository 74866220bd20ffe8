import { randomUUID } from 'node:crypto';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import { TestStack } from './support/harness';

/**
 * Anonymous sockets and loose socket payloads (issue 33, items 3 and 6), in API-key mode. Each test
 * speaks from its own address (X-Forwarded-For behind one trusted proxy), so their failed
 * attempts are counted apart.
 */
describe('socket abuse', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    AUTH_FAILURES_PER_MINUTE: '6',
    TRUST_PROXY_HOPS: '1',
  });
  let serial = 0;
  /** A fresh client address for one test. */
  const address = () => `203.0.113.${++serial}`;

  beforeAll(async () => {
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(() => stack.stop());

  const engineUrl = (transport: 'websocket' | 'polling', sid?: string) =>
    `${stack.baseUrl.replace(/^http/, transport === 'websocket' ? 'ws' : 'http')}/socket.io/?EIO=4&transport=${transport}${sid ? `&sid=${sid}` : ''}`;

  /**
   * A raw engine.io WebSocket that sends one Socket.IO CONNECT packet once open; resolves with the
   * Socket.IO packets it received and whether the server closed it within `withinMs`.
   */
  function rawWebSocket(from: string, connectPacket: string | null, withinMs: number) {
    return new Promise<{ packets: string[]; closed: boolean }>((resolve, reject) => {
      const ws = new WebSocket(engineUrl('websocket'), { headers: { 'x-forwarded-for': from } });
      const packets: string[] = [];
      const done = (closed: boolean) => {
        clearTimeout(timer);
        ws.removeAllListeners();
        ws.on('error', () => undefined);
        if (!closed) ws.terminate();
        resolve({ packets, closed });
      };
      const timer = setTimeout(() => done(false), withinMs);
      ws.on('error', reject);
      ws.on('message', (data: Buffer) => {
        const text = data.toString();
        if (text.startsWith('0') && connectPacket !== null) ws.send(connectPacket);
        else if (text === '2')
          ws.send('3'); // answer pings, as a client that means to stay does
        else if (text.startsWith('4')) packets.push(text.slice(1));
      });
      ws.on('close', () => done(true));
    });
  }

  /** A Socket.IO client's handshake on a namespace: 'connected', or the refusal's message. */
  function attempt(
    from: string,
    options: { namespace?: string; token?: string; transport?: 'websocket' | 'polling' } = {},
  ) {
    return new Promise<string>((resolve) => {
      const socket: Socket = io(`${stack.baseUrl}${options.namespace ?? '/deliberations'}`, {
        transports: [options.transport ?? 'websocket'],
        auth: options.token ? { token: options.token } : {},
        extraHeaders: { 'x-forwarded-for': from },
        reconnection: false,
        forceNew: true,
      });
      socket.once('connect', () => (socket.disconnect(), resolve('connected')));
      socket.once('connect_error', (error) => (socket.disconnect(), resolve(error.message)));
    });
  }

  it('refuses the default namespace / without a key, and closes the WebSocket at once', async () => {
    const started = Date.now();
    const { packets, closed } = await rawWebSocket(address(), '40', 3000);
    expect(packets).toHaveLength(1);
    expect(packets[0]).toMatch(/^4\{"message":"namespace \/ serves nothing: connect to \/deliberations"/);
    expect(closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(await attempt(address(), { namespace: '/' })).toMatch(/namespace \/ serves nothing/);
  });

  it('refuses the default namespace / and a namespace nobody serves over long-polling, and ends the session', async () => {
    for (const [connect, refusal] of [
      ['40', /^44\{"message":"namespace \/ serves nothing/],
      ['40/admin,', /^44\/admin,\{"message":"Invalid namespace"/],
    ] as const) {
      const headers = { 'x-forwarded-for': address() };
      const open = await fetch(engineUrl('polling'), { headers });
      expect(open.status).toBe(200);
      const { sid } = JSON.parse((await open.text()).slice(1)) as { sid: string };
      const post = await fetch(engineUrl('polling', sid), { method: 'POST', headers, body: connect });
      expect(post.status).toBe(200);
      const answer = await fetch(engineUrl('polling', sid), { headers, signal: AbortSignal.timeout(3000) });
      expect((await answer.text()).split('\x1e')[0]).toMatch(refusal);
      // The session ends within the refusal's grace: its next polls find it closed, then gone.
      let status = 200;
      for (let i = 0; i < 3 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 700));
        const poll = await fetch(engineUrl('polling', sid), { headers, signal: AbortSignal.timeout(3000) });
        status = poll.status;
        await poll.text();
      }
      expect(status).toBe(400);
    }
    expect(await attempt(address(), { namespace: '/', transport: 'polling' })).toMatch(
      /namespace \/ serves nothing/,
    );
  });

  it('refuses /deliberations without a key or with a wrong one, on both transports, and closes at once', async () => {
    const key = await stack.createUser('owner');
    for (const transport of ['websocket', 'polling'] as const) {
      expect(await attempt(address(), { transport })).toMatch(/unauthorized/);
      expect(await attempt(address(), { transport, token: `${key}x` })).toMatch(/unauthorized/);
      expect(await attempt(address(), { transport, token: key })).toBe('connected');
    }
    const started = Date.now();
    const { packets, closed } = await rawWebSocket(address(), '40/deliberations,', 3000);
    expect(packets[0]).toMatch(/^4\/deliberations,\{"message":"unauthorized/);
    expect(closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('keeps a connection refused on one namespace open while another of its namespaces is connected', async () => {
    const key = await stack.createUser('multiplexer');
    const from = address();
    const result = await new Promise<{ packets: string[]; closed: boolean }>((resolve, reject) => {
      const ws = new WebSocket(engineUrl('websocket'), { headers: { 'x-forwarded-for': from } });
      const packets: string[] = [];
      ws.on('error', reject);
      ws.on('message', (data: Buffer) => {
        const text = data.toString();
        if (text.startsWith('0')) ws.send(`40/deliberations,${JSON.stringify({ token: key })}`);
        else if (text.startsWith('40/deliberations,')) ws.send('40');
        else if (text.startsWith('4')) packets.push(text.slice(1));
      });
      ws.on('close', () => resolve({ packets, closed: true }));
      setTimeout(() => {
        ws.removeAllListeners('close');
        ws.close();
        resolve({ packets, closed: false });
      }, 2000);
    });
    expect(result.packets[0]).toMatch(/^4\{"message":"namespace \/ serves nothing/);
    expect(result.closed).toBe(false);
  });

  it('counts anonymous attempts against the address, and refuses it before any key lookup past the limit', async () => {
    const key = await stack.createUser('neighbour');
    const from = address();
    // Six failures (AUTH_FAILURES_PER_MINUTE): no key on /deliberations, the default namespace, a wrong key.
    for (let i = 0; i < 2; i++) expect(await attempt(from)).toMatch(/unauthorized/);
    for (let i = 0; i < 2; i++) expect(await attempt(from, { namespace: '/' })).toMatch(/serves nothing/);
    for (let i = 0; i < 2; i++) expect(await attempt(from, { token: `${key}x` })).toMatch(/unauthorized/);
    // Now even a valid key from that address is refused, before it is looked up, on either transport.
    for (const transport of ['websocket', 'polling'] as const) {
      expect(await attempt(from, { token: key, transport })).toMatch(
        /Too many failed authentications from your address: at most 6 a minute/,
      );
    }
    expect(await attempt(from, { namespace: '/' })).toMatch(/serves nothing/);
    // Another address is not.
    expect(await attempt(address(), { token: key })).toBe('connected');
  });

  it('closes an engine.io connection that joins no namespace', async () => {
    const { packets, closed } = await rawWebSocket(address(), null, 14_000);
    expect(packets).toEqual([]);
    expect(closed).toBe(true);
  }, 20_000);

  describe('payloads', () => {
    let socket: Socket;
    beforeAll(async () => {
      socket = await stack.connect(await stack.createUser('payloads'));
    });
    type Ack = {
      ok?: true;
      error?: { message: string; fields?: Record<string, string>; statusCode?: number };
    };
    const send = async (event: string, payload: unknown) => (await socket.emitWithAck(event, payload)) as Ack;

    it('refuses an afterSeq that is not a safe non-negative integer, naming it', async () => {
      for (const afterSeq of [1e308, 2 ** 53, -1, 1.5, '3', null]) {
        const ack = await send('subscribe', { messageId: randomUUID(), afterSeq });
        expect(ack.ok).toBeUndefined();
        expect(ack.error?.fields).toEqual({ afterSeq: expect.any(String) });
        expect(ack.error?.message).toMatch(/afterSeq/);
      }
    });

    it('refuses more than one target in a subscription, naming both', async () => {
      const ack = await send('subscribe', { messageId: randomUUID(), batchId: randomUUID() });
      expect(ack.ok).toBeUndefined();
      expect(Object.keys(ack.error?.fields ?? {}).sort()).toEqual(['batchId', 'messageId']);
      const withSeq = await send('subscribe', { batchId: randomUUID(), afterSeq: 3 });
      expect(Object.keys(withSeq.error?.fields ?? {}).sort()).toEqual(['afterSeq', 'batchId']);
      const both = await send('unsubscribe', { messageId: randomUUID(), batchId: randomUUID() });
      expect(Object.keys(both.error?.fields ?? {}).sort()).toEqual(['batchId', 'messageId']);
    });

    it('refuses unknown fields and payloads that are not objects on every event, naming them', async () => {
      const id = randomUUID();
      for (const [event, payload, field] of [
        ['subscribe', { messageId: id, evil: 1 }, 'evil'],
        ['subscribe', 'abc', 'payload'],
        ['subscribe', [id], 'payload'],
        ['unsubscribe', { messageId: id, evil: 1 }, 'evil'],
        ['unsubscribe', {}, 'messageId'],
        ['unsubscribe', { messageId: 7 }, 'messageId'],
        ['unsubscribe', { batchId: 7 }, 'batchId'],
        ['cancel', { messageId: id, evil: 1 }, 'evil'],
        ['cancel', 42, 'payload'],
        ['deliberate', { question: 'Q?', evil: 1 }, 'evil'],
      ] as const) {
        const ack = await send(event, payload);
        expect([event, ack.ok]).toEqual([event, undefined]);
        expect([event, Object.keys(ack.error?.fields ?? {})]).toEqual([event, [field]]);
      }
      expect((await send('cancel', { messageId: id, evil: 1 })).error?.statusCode).toBe(400);
      // What the clients send is still accepted.
      expect(await send('unsubscribe', { messageId: id })).toEqual({ ok: true });
      expect(await send('unsubscribe', { batchId: id })).toEqual({ ok: true });
    });
  });
});

import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import IORedis from 'ioredis';
import { hashStreamTicket, streamTicketKey } from '../apps/gateway/src/auth/stream-tickets';
import { TestStack } from './support/harness';

describe('users and API keys: everyone sees only their own', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey' });
  let alice = '';
  let bob = '';
  let aliceRun: { messageId: string; conversationId: string };

  beforeAll(async () => {
    await stack.start();
    alice = await stack.createUser('alice');
    bob = await stack.createUser('bob');
    aliceRun = await stack.deliberate(
      { question: 'Private question', councilModels: ['sim/a', 'sim/b'] },
      alice,
    );
  }, 60_000);
  afterAll(() => stack.stop());

  it('refuses requests without a valid key', async () => {
    const missing = await stack.api('POST', '/api/deliberations', { body: { question: 'q' } });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ statusCode: 401, message: expect.stringContaining('Bearer') });
    expect((await stack.api('GET', '/api/conversations', { token: 'ck_wrong' })).status).toBe(401);
    expect((await stack.api('GET', '/api/modes')).status).toBe(200);
    await expect(stack.connect()).rejects.toThrow(/unauthorized/);
    await expect(stack.connect('ck_wrong')).rejects.toThrow(/unauthorized/);
  });

  it('creates a user and a key from the command line', async () => {
    const { stdout } = await promisify(execFile)(
      'npm',
      ['run', '-s', 'user:create', '--', '--name', 'carol'],
      {
        cwd: path.resolve(__dirname, '..'),
        env: { ...process.env, ...stack.env },
      },
    );
    const key = /api key \(shown once, store it now\): (ck_\S+)/.exec(stdout)?.[1];
    expect(key).toBeDefined();
    expect((await stack.api('GET', '/api/conversations', { token: key })).status).toBe(200);
    const refused = promisify(execFile)('npm', ['run', '-s', 'user:create', '--', '--name', 'bad name!'], {
      cwd: path.resolve(__dirname, '..'),
      env: { ...process.env, ...stack.env },
    });
    await expect(refused).rejects.toMatchObject({ code: 2 });
    await stack.db.query(`DELETE FROM users WHERE name = 'carol'`);
  }, 30_000);

  it('stores only a hash of each key', async () => {
    const rows: { key_hash: string }[] = await stack.db.query('SELECT key_hash FROM api_keys');
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect([alice, bob]).not.toContain(row.key_hash);
    }
  });

  it("answers 404 to another user's ids over HTTP", async () => {
    const { messageId, conversationId } = aliceRun;
    expect((await stack.api('GET', `/api/deliberations/${messageId}`, { token: alice })).status).toBe(200);
    expect((await stack.api('GET', `/api/deliberations/${messageId}`, { token: bob })).status).toBe(404);
    expect((await stack.api('GET', `/api/deliberations/${messageId}/events`, { token: bob })).status).toBe(
      404,
    );
    expect((await stack.api('GET', `/api/conversations/${conversationId}`, { token: bob })).status).toBe(404);
    expect((await stack.api('DELETE', `/api/conversations/${conversationId}`, { token: bob })).status).toBe(
      404,
    );
    const followUp = await stack.api('POST', '/api/deliberations', {
      token: bob,
      body: { question: 'Let me in', conversationId },
    });
    expect(followUp.status).toBe(404);
    const bobs = await stack.api<unknown[]>('GET', '/api/conversations', { token: bob });
    expect(bobs.body).toEqual([]);
    const alices = await stack.api<{ id: string }[]>('GET', '/api/conversations', { token: alice });
    expect(alices.body.map((c) => c.id)).toEqual([conversationId]);
  });

  describe('EventSource: a single-use stream ticket, never a key in the URL', () => {
    const ticketFor = async (messageId: string, token: string) =>
      stack.api<{ ticket: string; expiresInSeconds: number }>(
        'POST',
        `/api/deliberations/${messageId}/events/ticket`,
        { token },
      );
    const openWith = (messageId: string, ticket: string) =>
      fetch(`${stack.baseUrl}/api/deliberations/${messageId}/events?ticket=${encodeURIComponent(ticket)}`);

    it('opens the stream once with a ticket from POST .../events/ticket; only its hash is in Redis', async () => {
      const issued = await ticketFor(aliceRun.messageId, alice);
      expect(issued.status).toBe(200);
      expect(issued.body).toEqual({ ticket: expect.stringMatching(/^cst_/), expiresInSeconds: 60 });
      const redis = new IORedis(stack.config.redisUrl);
      try {
        const key = streamTicketKey(stack.config.redisPrefix, hashStreamTicket(issued.body.ticket));
        expect(await redis.ttl(key)).toBeGreaterThan(0);
        expect(await redis.ttl(key)).toBeLessThanOrEqual(60);
        const stored = await redis.keys(`${stack.config.redisPrefix}:sse-ticket:*`);
        expect(stored.join()).not.toContain(issued.body.ticket);
        expect(await redis.get(key)).not.toContain(issued.body.ticket);
      } finally {
        redis.disconnect();
      }
      const own = await openWith(aliceRun.messageId, issued.body.ticket);
      expect(own.status).toBe(200);
      expect(await own.text()).toContain('event: complete');
      // Used: a second open with the same ticket is refused.
      const again = await openWith(aliceRun.messageId, issued.body.ticket);
      expect(again.status).toBe(401);
      expect(await again.json()).toMatchObject({
        statusCode: 401,
        message: expect.stringContaining('ticket'),
      });
    });

    it("answers 404 for a ticket to another user's deliberation", async () => {
      const refused = await ticketFor(aliceRun.messageId, bob);
      expect(refused.status).toBe(404);
      expect(JSON.stringify(refused.body)).not.toContain('cst_');
      expect((await stack.api('POST', `/api/deliberations/${aliceRun.messageId}/events/ticket`)).status).toBe(
        401,
      );
    });

    it('refuses a ticket on another deliberation than its own, and consumes it', async () => {
      const bobRun = await stack.deliberate({ question: 'Bob asks', councilModels: ['sim/a', 'sim/b'] }, bob);
      const issued = await ticketFor(bobRun.messageId, bob);
      // Bob's ticket does not open Alice's stream (nor any other): 401, not her events.
      const elsewhere = await openWith(aliceRun.messageId, issued.body.ticket);
      expect(elsewhere.status).toBe(401);
      expect(await elsewhere.text()).not.toContain('Private question');
      expect((await openWith(bobRun.messageId, issued.body.ticket)).status).toBe(401);
    });

    it('refuses an expired ticket (its Redis key gone) and an unknown one', async () => {
      const issued = await ticketFor(aliceRun.messageId, alice);
      const redis = new IORedis(stack.config.redisUrl);
      try {
        await redis.del(streamTicketKey(stack.config.redisPrefix, hashStreamTicket(issued.body.ticket)));
      } finally {
        redis.disconnect();
      }
      expect((await openWith(aliceRun.messageId, issued.body.ticket)).status).toBe(401);
      expect((await openWith(aliceRun.messageId, 'cst_made-up')).status).toBe(401);
      // An API key in the ticket's place is not a ticket.
      expect((await openWith(aliceRun.messageId, alice)).status).toBe(401);
    });

    it('refuses the ticket of a key revoked after it was issued', async () => {
      const dave = await stack.createUser('dave');
      const daveRun = await stack.deliberate(
        { question: 'Dave asks', councilModels: ['sim/a', 'sim/b'] },
        dave,
      );
      const issued = await ticketFor(daveRun.messageId, dave);
      expect(issued.status).toBe(200);
      await stack.revokeKey(dave.slice(0, 8));
      expect((await openWith(daveRun.messageId, issued.body.ticket)).status).toBe(401);
    }, 30_000);

    it('refuses ?access_token= on every route with a 400 naming it, the key never looked at', async () => {
      for (const url of [
        `/api/deliberations/${aliceRun.messageId}/events?access_token=${alice}`,
        `/api/conversations?access_token=${alice}`,
        `/api/modes?access_token=x`,
        `/v1/models?access_token=${alice}`,
      ]) {
        const refused = await fetch(`${stack.baseUrl}${url}`);
        expect(refused.status).toBe(400);
        const body = (await refused.json()) as { statusCode: number; message: string; fields?: object };
        expect(body).toMatchObject({
          statusCode: 400,
          error: 'Bad Request',
          message: expect.stringContaining('access_token'),
          fields: { access_token: expect.any(String) },
        });
        expect(body.message).toContain('Authorization');
        expect(body.message).toContain('events/ticket');
        expect(JSON.stringify(body)).not.toContain(alice);
      }
      // Even beside a good header.
      const withHeader = await stack.api('GET', `/api/conversations?access_token=${alice}`, { token: alice });
      expect(withHeader.status).toBe(400);
    });
  });

  it("refuses a Socket.IO subscription to another user's message", async () => {
    const socket = await stack.connect(bob);
    const ack = await socket.emitWithAck('subscribe', { messageId: aliceRun.messageId });
    expect(ack).toEqual({ error: { message: expect.stringContaining('not found'), statusCode: 404 } });
    const own = await stack.connect(alice);
    const events = await stack.follow(aliceRun.messageId, { socket: own });
    expect(events.at(-1)?.type).toBe('complete');
  });

  it('starts a deliberation over Socket.IO for the authenticated user', async () => {
    const socket = await stack.connect(bob);
    const ack = await socket.emitWithAck('deliberate', {
      question: 'Socket start',
      councilModels: ['sim/a', 'sim/b'],
    });
    expect(ack).toEqual({ conversationId: expect.any(String), messageId: expect.any(String) });
    const events = await stack.follow(ack.messageId, { socket });
    expect(events.at(-1)?.type).toBe('complete');
    expect((await stack.api('GET', `/api/deliberations/${ack.messageId}`, { token: alice })).status).toBe(
      404,
    );
  });
});

import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
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

  it('accepts the key as ?access_token= on the SSE stream only, for EventSource', async () => {
    const url = `/api/deliberations/${aliceRun.messageId}/events`;
    const own = await fetch(`${stack.baseUrl}${url}?access_token=${alice}`);
    expect(own.status).toBe(200);
    await own.body?.cancel();
    expect((await fetch(`${stack.baseUrl}${url}?access_token=${bob}`)).status).toBe(404);
    expect((await stack.api('GET', `/api/conversations?access_token=${alice}`)).status).toBe(401);
  });

  it("refuses a Socket.IO subscription to another user's message", async () => {
    const socket = await stack.connect(bob);
    const ack = await socket.emitWithAck('subscribe', { messageId: aliceRun.messageId });
    expect(ack).toEqual({ error: { message: expect.stringContaining('not found') } });
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

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RANKING_PROMPT_MARKER, STOPPED_CALL_ERROR, SYNTHESIS_PROMPT_MARKER } from '@conclave/deliberation';
import { OpenAiCompatibleProvider } from '@conclave/llm';
import IORedis from 'ioredis';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';
import { freePort } from './support/private-postgres';

/** A Redis of this test's own, to shut down and bring back empty (the shared one on 6379 stays up). */
class PrivateRedis {
  child: ChildProcess | null = null;
  /** `dir`: where it keeps its dump, to come back with its keys after `shutdown(true)`. */
  constructor(
    readonly port: number,
    readonly dir: string | null = null,
  ) {}

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--save', '', '--appendonly', 'no'];
    if (this.dir) args.push('--dir', this.dir);
    this.child = spawn('redis-server', args, { stdio: 'ignore' });
    const probe = new IORedis(this.port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 100 });
    try {
      for (let i = 0; ; i++) {
        try {
          await probe.connect();
          await probe.ping();
          return;
        } catch (error) {
          if (i > 100) throw error;
          probe.disconnect();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    } finally {
      probe.disconnect();
    }
  }

  /**
   * `SHUTDOWN NOSAVE`, as an operator (or a crash) takes it away: every key is gone with it; with
   * `save`, `SHUTDOWN SAVE`: it comes back with its keys (a restart with persistence).
   */
  async shutdown(save = false): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const client = new IORedis(this.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    await client.connect();
    await client.call('SHUTDOWN', save ? 'SAVE' : 'NOSAVE').catch(() => undefined);
    client.disconnect();
    await exited;
  }
}

const COUNCIL_DELAY_MS = 1500;
const CHAIRMAN_DELAY_MS = 1000;
/** The answers of models named `local/slow…`: long enough to be in flight through the whole outage. */
const SLOW_DELAY_MS = 30_000;

/** Each deliberation has models of its own (`local/<owner>-…`): a request's model says whose it is. */
const ownerOf = (request: RecordedChatRequest) => /^local\/(\w+)-/.exec(request.model ?? '')?.[1] ?? '';
const lastUser = (request: RecordedChatRequest) =>
  [...(request.messages as { role: string; content: string }[])].reverse().find((m) => m.role === 'user')
    ?.content ?? '';
const isTitle = (request: RecordedChatRequest) => lastUser(request).startsWith('Generate a brief title');

function script({ request }: ScriptContext): ChatBehaviour {
  const prompt = lastUser(request);
  if (isTitle(request)) return { kind: 'success', content: 'A title', delayMs: 10 };
  if (request.model?.startsWith('local/slow'))
    return { kind: 'success', content: 'slow', delayMs: SLOW_DELAY_MS };
  if (prompt.includes(RANKING_PROMPT_MARKER)) {
    return {
      kind: 'success',
      content: 'Fine.\n\nFINAL RANKING:\n1. Response A\n2. Response B',
      delayMs: COUNCIL_DELAY_MS,
    };
  }
  if (prompt.includes(SYNTHESIS_PROMPT_MARKER)) {
    return { kind: 'success', content: 'The synthesis.', delayMs: CHAIRMAN_DELAY_MS };
  }
  return { kind: 'success', content: `answer of ${request.model}`, delayMs: COUNCIL_DELAY_MS };
}

/**
 * Issue 34, item 1: a stop accepted while Redis is down. A stage's answers are stored, its enqueue
 * of the next stage waits for Redis, the user's cancel comes in meanwhile (stored in PostgreSQL;
 * its publish to the workers is lost). When Redis comes back empty, the next stage's job must find
 * the deliberation cancelled: the provider (here a local chat-completions server, which records
 * when each request reached it) receives no call after the cancel was accepted.
 */
describe('a cancel accepted while Redis is down', () => {
  let redis: PrivateRedis;
  let server: ChatCompletionsServer;
  let stack: TestStack;

  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    server = await startChatCompletionsServer(script);
    stack = new TestStack({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      // A real provider is configured: the in-process worker gets the local server injected.
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
      // A job that settles while Redis is away cannot be finished on the empty Redis that comes
      // back: closing the worker hands it back after this long instead of the 150 s default.
      WORKER_SHUTDOWN_TIMEOUT_MS: '2000',
    });
    await stack.start({ worker: false });
    await stack.startWorker(new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'sk-outage' }));
  }, 60_000);
  afterAll(async () => {
    // Back (empty) so the stack can clean up its keys.
    if (redis && !redis.running) await redis.start();
    await stack?.stop();
    await server?.close();
    if (redis?.running) await new Promise((resolve) => redis.child?.once('exit', resolve).kill('SIGKILL'));
  }, 60_000);

  async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('no model call starts after the cancel, once Redis is back', async () => {
    const owners = ['d0', 'd1', 'd2'];
    const messageIds = await Promise.all(
      owners.map(
        async (owner) =>
          (
            await stack.deliberate({
              question: `${owner}: what makes a good API?`,
              councilModels: [`local/${owner}-a`, `local/${owner}-b`],
              chairmanModel: `local/${owner}-c`,
            })
          ).messageId,
      ),
    );
    const answers = () => server.requests.filter((r) => !isTitle(r));
    // Every first-stage call is on its way (each takes 1.5 s): Redis goes away now.
    await until('the first stage calls', () => answers().length >= 2 * owners.length);
    await redis.shutdown();

    // The first stage's answers are stored and the message moved on to stage2; the enqueue of
    // stage2 waits for Redis.
    const stages = async () =>
      (
        (await stack.db.query('SELECT stage, status FROM messages WHERE id = ANY($1)', [messageIds])) as {
          stage: string | null;
          status: string;
        }[]
      ).map((m) => `${m.status}:${m.stage}`);
    await until('every first stage committed', async () =>
      (await stages()).every((s) => s === 'running:stage2'),
    );
    expect(answers()).toHaveLength(2 * owners.length);

    // The user's stop, while Redis is down: accepted (stored in PostgreSQL).
    const acceptedAt = new Map<string, number>();
    for (const [i, messageId] of messageIds.entries()) {
      const response = await stack.api('POST', `/api/deliberations/${messageId}/cancel`);
      expect(response.status).toBe(200);
      acceptedAt.set(owners[i], Date.now());
    }
    expect(await stages()).toEqual(owners.map(() => 'cancelled:null'));

    // Redis comes back, empty. The held-back enqueues of stage2 reach it and a worker runs them.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await redis.start();
    await until(
      'the stage2 jobs to run',
      async () => {
        const jobs = await Promise.all(messageIds.map((id) => stack.jobsOf(id)));
        if (!jobs.every((list) => list.some((job) => job.id.endsWith('__stage2')))) return false;
        const counts = await stack.queueCounts();
        return counts.waiting + counts.active + counts.delayed + counts.prioritized === 0;
      },
      60_000,
    );
    // A call that had started would be in flight or answered by now (each takes 1.5 s at most).
    await new Promise((resolve) => setTimeout(resolve, COUNCIL_DELAY_MS + 500));

    const late = server.requests
      .filter((r) => r.receivedAt > (acceptedAt.get(ownerOf(r)) ?? Number.POSITIVE_INFINITY))
      .map((r) => `${r.model} +${r.receivedAt - (acceptedAt.get(ownerOf(r)) ?? 0)} ms`);
    expect(late).toEqual([]);
    expect(answers()).toHaveLength(2 * owners.length);
    // Each deliberation stays cancelled, with its first stage as the partial result.
    const events: { message_id: string; type: string }[] = await stack.db.query(
      `SELECT message_id, type FROM deliberation_events WHERE message_id = ANY($1) AND type IN ('cancelled', 'stage2_complete')`,
      [messageIds],
    );
    expect(events.map((e) => e.type).sort()).toEqual(['cancelled', 'cancelled', 'cancelled']);
  }, 120_000);

  it('calls in flight when it came are aborted while Redis is still down, their outcomes kept', async () => {
    const { messageId } = await stack.deliberate({
      question: 'slow0: what makes a good API?',
      councilModels: ['local/slow0-a', 'local/slow0-b'],
      chairmanModel: 'local/slow0-c',
    });
    const calls = () => server.requests.filter((r) => ownerOf(r) === 'slow0' && !isTitle(r));
    await until('the first stage calls', () => calls().length === 2);
    await redis.shutdown();

    expect((await stack.api('POST', `/api/deliberations/${messageId}/cancel`)).status).toBe(200);
    // Without the control channel the worker learns of the stop from PostgreSQL: within seconds,
    // not when the calls end (30 s) or at its next reconcile pass.
    await until(
      'the calls in flight to be aborted',
      () => calls().every((r) => r.outcome === 'client-disconnected'),
      15_000,
    );
    const stored = async () =>
      (await stack.db.query(
        `SELECT model, ok, error FROM model_calls WHERE message_id = $1 AND stage = 'stage1' ORDER BY model`,
        [messageId],
      )) as { model: string; ok: boolean; error: string | null }[];
    // Their outcomes are stored (PostgreSQL is up): usage counts what was asked.
    await until('the stopped calls to be stored', async () => (await stored()).length === 2);
    expect(await stored()).toEqual(
      ['local/slow0-a', 'local/slow0-b'].map((model) => ({
        model,
        ok: false,
        error: STOPPED_CALL_ERROR.cancelled,
      })),
    );
    expect(redis.running).toBe(false);
    await redis.start();
    expect(calls()).toHaveLength(2);
    // And work goes on once Redis is back (the gateway takes new work once it sees Redis again).
    let after = '';
    await until('the gateway to take new work', async () => {
      const response = await stack.api<{ messageId: string }>('POST', '/api/deliberations', {
        body: {
          question: 'd9: and now?',
          councilModels: ['local/d9-a', 'local/d9-b'],
          chairmanModel: 'local/d9-c',
        },
      });
      after = response.body.messageId;
      return response.status === 202;
    });
    await until(
      'a new deliberation to complete',
      async () =>
        (
          (await stack.db.query('SELECT status FROM messages WHERE id = $1', [after])) as {
            status: string;
          }[]
        )[0].status === 'complete',
      60_000,
    );
  }, 120_000);
});

/**
 * The same for a deliberation still waiting for a worker: its job cannot be removed while Redis is
 * down, and Redis comes back with it (a restart with persistence). The worker that takes the job
 * must not send the question: a job's copy of it is trusted only when no stop can have been missed
 * since the deliberation was stored.
 */
describe('a cancel of a queued deliberation accepted while Redis is down', () => {
  let redis: PrivateRedis;
  let dir: string;
  let server: ChatCompletionsServer;
  let stack: TestStack;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'conclave-redis-'));
    redis = new PrivateRedis(await freePort(), dir);
    await redis.start();
    server = await startChatCompletionsServer(script);
    stack = new TestStack({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
      WORKER_SHUTDOWN_TIMEOUT_MS: '2000',
    });
    // No worker yet: the deliberation waits in the queue.
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    if (redis && !redis.running) await redis.start();
    await stack?.stop();
    await server?.close();
    if (redis?.running) await new Promise((resolve) => redis.child?.once('exit', resolve).kill('SIGKILL'));
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('the job Redis kept sends nothing to the provider', async () => {
    const { messageId } = await stack.deliberate({
      question: 'q0: what makes a good API?',
      councilModels: ['local/q0-a', 'local/q0-b'],
      chairmanModel: 'local/q0-c',
    });
    expect(await stack.jobsOf(messageId)).toEqual([{ id: `${messageId}__stage1`, name: 'run-stage' }]);
    await redis.shutdown(true);
    expect((await stack.api('POST', `/api/deliberations/${messageId}/cancel`)).status).toBe(200);
    await redis.start();
    // Redis came back with the job.
    expect(await stack.jobsOf(messageId)).toEqual([{ id: `${messageId}__stage1`, name: 'run-stage' }]);

    await stack.startWorker(new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'sk-outage' }));
    const deadline = Date.now() + 30_000;
    for (;;) {
      const counts = await stack.queueCounts();
      if (counts.completed + counts.failed > 0) break;
      if (Date.now() > deadline) throw new Error('the job did not run');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // A call that had started would have reached the server by now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(server.requests.map((r) => r.model)).toEqual([]);
    const [{ status }]: { status: string }[] = await stack.db.query(
      'SELECT status FROM messages WHERE id = $1',
      [messageId],
    );
    expect(status).toBe('cancelled');
  }, 120_000);
});

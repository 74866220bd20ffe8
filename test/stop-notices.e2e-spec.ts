import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { OpenAiCompatibleProvider } from '@conclave/llm';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';
import { freePort } from './support/private-postgres';

const ROOT = path.resolve(__dirname, '..');
const FAST_MS = 1500;
const SLOW_MS = 30_000;

const lastUser = (request: RecordedChatRequest) =>
  [...(request.messages as { role: string; content: string }[])].reverse().find((m) => m.role === 'user')
    ?.content ?? '';
const isTitle = (request: RecordedChatRequest) => lastUser(request).startsWith('Generate a brief title');
/** Each deliberation has models of its own (`local/<owner>-…`): a request's model says whose it is. */
const ownerOf = (request: RecordedChatRequest) => /^local\/(\w+)-/.exec(request.model ?? '')?.[1] ?? '';

function script({ request }: ScriptContext): ChatBehaviour {
  if (isTitle(request)) return { kind: 'success', content: 'A title', delayMs: 10 };
  if (request.model?.startsWith('local/slow')) return { kind: 'success', content: 'slow', delayMs: SLOW_MS };
  if (lastUser(request).includes('FINAL RANKING'))
    return {
      kind: 'success',
      content: 'Fine.\n\nFINAL RANKING:\n1. Response A\n2. Response B',
      delayMs: FAST_MS,
    };
  return { kind: 'success', content: `answer of ${request.model}`, delayMs: FAST_MS };
}

/**
 * Issue 34, item 1, the case the Redis control channel cannot cover: the process that takes the
 * stop cannot reach Redis (here `npm run user:cancel-work` with REDIS_URL on a port where nothing
 * listens) while the workers keep theirs, so no `cancel` is ever published and the workers'
 * subscriptions never break. The stop reaches them through PostgreSQL (NOTIFY conclave_stops, sent
 * by the transaction that stores it): a next stage carried in a worker's memory does not start its
 * calls, and calls in flight are aborted within seconds, not at the next reconcile pass.
 */
describe('a stop stored by a process without Redis, the workers with theirs', () => {
  let server: ChatCompletionsServer;
  let stack: TestStack;
  let deadRedis: string;

  beforeAll(async () => {
    deadRedis = `redis://127.0.0.1:${await freePort()}`;
    server = await startChatCompletionsServer(script);
    stack = new TestStack({
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      AUTH_MODE: 'apikey',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
      // One job at a time: a next stage waits in the queue behind another deliberation's stage.
      WORKER_CONCURRENCY: '1',
      // The reconciler stays out of it: what stops the work here is the stop's own announcement.
      RECONCILE_INTERVAL_MS: '600000',
    });
    await stack.start({ worker: false });
    await stack.startWorker(new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'sk-notice' }));
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await server?.close();
  }, 60_000);

  async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** `npm run user:cancel-work` without Redis; resolves with when PostgreSQL stored the stop. */
  async function cancelWithoutRedis(user: string, messageId: string): Promise<number> {
    const { stdout } = await promisify(execFile)(
      'npm',
      ['run', '-s', 'user:cancel-work', '--', '--user', user],
      {
        cwd: ROOT,
        env: { ...process.env, ...stack.env, REDIS_URL: deadRedis },
      },
    );
    expect(stdout).toMatch(new RegExp(`user ${user}: cancelled 1 deliberation`));
    const [row]: { status: string; completed_at: Date }[] = await stack.db.query(
      'SELECT status, completed_at FROM messages WHERE id = $1',
      [messageId],
    );
    expect(row.status).toBe('cancelled');
    return new Date(row.completed_at).getTime();
  }

  const state = async (messageId: string) =>
    (
      (await stack.db.query('SELECT status, stage FROM messages WHERE id = $1', [messageId])) as {
        status: string;
        stage: string | null;
      }[]
    ).map((m) => `${m.status}:${m.stage}`)[0];

  it('a next stage carried in memory starts no call', async () => {
    const xavier = await stack.createUser('xavier');
    const x = await stack.deliberate(
      {
        question: 'x: what makes a good API?',
        councilModels: ['local/x-a', 'local/x-b'],
        chairmanModel: 'local/x-c',
      },
      xavier,
    );
    // Queued behind x's first stage; its slow calls then hold the one slot while x's stage2 waits.
    const yann = await stack.createUser('yann');
    const y = await stack.deliberate(
      {
        question: 'y: and a slow one?',
        councilModels: ['local/slowy-a', 'local/slowy-b'],
        chairmanModel: 'local/slowy-c',
      },
      yann,
    );
    const calls = (owner: string) => server.requests.filter((r) => ownerOf(r) === owner && !isTitle(r));
    await until(
      'x at stage2 and y calling',
      async () => (await state(x.messageId)) === 'running:stage2' && calls('slowy').length === 2,
    );
    expect(calls('x')).toHaveLength(2);

    const storedAt = await cancelWithoutRedis('xavier', x.messageId);
    // y ends (a user's stop over Redis): the slot is free, x's stage2 job runs.
    expect(
      (await stack.api('POST', `/api/deliberations/${y.messageId}/cancel`, { token: yann })).status,
    ).toBe(200);
    await until(
      'the queue to drain',
      async () => {
        const counts = await stack.queueCounts();
        return counts.waiting + counts.active + counts.delayed + counts.prioritized === 0;
      },
      60_000,
    );
    // A call that had started would have reached the server by now.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const late = calls('x')
      .filter((r) => r.receivedAt > storedAt)
      .map((r) => `${r.model} +${r.receivedAt - storedAt} ms`);
    expect(late).toEqual([]);
    expect(await state(x.messageId)).toBe('cancelled:null');
  }, 120_000);

  it('calls in flight are aborted within seconds', async () => {
    const zoe = await stack.createUser('zoe');
    const z = await stack.deliberate(
      {
        question: 'z: what is slow?',
        councilModels: ['local/slowz-a', 'local/slowz-b'],
        chairmanModel: 'local/slowz-c',
      },
      zoe,
    );
    const calls = () => server.requests.filter((r) => ownerOf(r) === 'slowz' && !isTitle(r));
    await until('the first stage calls', () => calls().length === 2);
    await cancelWithoutRedis('zoe', z.messageId);
    // Without the notice they would run to their end (30 s): the reconciler is out of the way.
    await until(
      'the calls in flight to be aborted',
      () => calls().every((r) => r.outcome === 'client-disconnected'),
      15_000,
    );
    expect(calls()).toHaveLength(2);
  }, 120_000);
});

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import type { INestApplication } from '@nestjs/common';
import { loadConfig, type ConclaveConfig } from '@conclave/config';
import { STAGE_QUEUE, type DeliveredEvent, type StageJobData } from '@conclave/contracts';
import type { ModelProvider } from '@conclave/llm';
import { createLogger } from '@conclave/observability';
import {
  ApiKeysRepository,
  createDataSource,
  migrate,
  type ConversationTable,
  type StageRowRecord,
} from '@conclave/persistence';
import IORedis from 'ioredis';
import { Queue } from 'bullmq';
import { io, type Socket } from 'socket.io-client';
import type { DataSource } from 'typeorm';
import { createGateway } from '../../apps/gateway/src/app';
import { dropDatabases } from './database';
import { startWorker, type RunningWorker } from '../../apps/worker/src/worker';

const ROOT = path.resolve(__dirname, '../..');

/**
 * One isolated Conclave for a test file: its own database, its own Redis key prefix, a real
 * gateway on a free port and real workers (in this process, or as child processes to kill).
 */
export class TestStack {
  readonly id = randomBytes(5).toString('hex');
  readonly env: Record<string, string>;
  config: ConclaveConfig;
  db!: DataSource;
  app: INestApplication | null = null;
  baseUrl = '';
  private readonly workers: RunningWorker[] = [];
  private readonly children: ChildProcess[] = [];
  private readonly sockets: Socket[] = [];

  /** `env` overrides the defaults; as a function it gets the stack's id (e.g. for DATABASE_URL). */
  constructor(env: Record<string, string> | ((id: string) => Record<string, string>) = {}) {
    const overrides = typeof env === 'function' ? env(this.id) : env;
    this.env = {
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/conclave_t_${this.id}`,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: `t-${this.id}`,
      AUTH_MODE: 'none',
      SIM_LATENCY_MS: '5',
      SCARF_ANALYTICS: 'false',
      // Tests run side by side: every worker's health/metrics server takes a free port.
      WORKER_HTTP_PORT: '0',
      DEFAULT_COUNCIL_MODELS: 'sim/athena,sim/hermes,sim/apollo',
      DEFAULT_CHAIRMAN_MODEL: 'sim/chairman',
      ...overrides,
    };
    this.config = loadConfig(this.env);
  }

  async start(options: { worker?: boolean; realProvider?: ModelProvider | null } = {}): Promise<this> {
    await migrate(this.config.databaseUrl);
    this.db = createDataSource(this.config.databaseUrl, 4);
    await this.db.initialize();
    this.app = await createGateway(this.config, { logger: false });
    await this.app.listen(0, '127.0.0.1');
    const address = this.app.getHttpServer().address() as { port: number };
    this.baseUrl = `http://127.0.0.1:${address.port}`;
    if (options.worker !== false) await this.startWorker(options.realProvider);
    return this;
  }

  async startWorker(realProvider?: ModelProvider | null): Promise<RunningWorker> {
    const worker = await startWorker(this.config, {
      logger: createLogger('silent', 'worker'),
      ...(realProvider !== undefined ? { realProvider } : {}),
    });
    this.workers.push(worker);
    return worker;
  }

  /** Closes one in-process worker before the stack stops (stop() then leaves it alone). */
  async stopWorker(worker: RunningWorker): Promise<void> {
    const index = this.workers.indexOf(worker);
    if (index >= 0) this.workers.splice(index, 1);
    await worker.close();
  }

  /** Everything a spawned process has written to stdout and stderr so far. */
  readonly outputs = new Map<ChildProcess, string>();

  /** A worker in its own process, so a test can SIGKILL it. Resolves once it consumes jobs. */
  async spawnWorker(extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
    return (await this.spawnProcess('apps/worker/src/main.ts', /consuming/, extraEnv)).child;
  }

  /** A gateway in its own process on a free port; resolves with its base URL once it listens. */
  async spawnGateway(
    extraEnv: Record<string, string> = {},
  ): Promise<{ child: ChildProcess; baseUrl: string }> {
    const { child, match } = await this.spawnProcess(
      'apps/gateway/src/main.ts',
      /listening on http:\/\/localhost:(\d+)/,
      {
        PORT: '0',
        HOST: '127.0.0.1',
        ...extraEnv,
      },
    );
    return { child, baseUrl: `http://127.0.0.1:${match[1]}` };
  }

  /**
   * Starts a process, once more if Node itself dies while starting (a V8 fatal error before any
   * of our code runs has been seen on busy CI machines); any other failure stands.
   */
  private async spawnProcess(
    entry: string,
    ready: RegExp,
    extraEnv: Record<string, string>,
  ): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
    try {
      return await this.spawnOnce(entry, ready, extraEnv);
    } catch (error) {
      if (!/Fatal error in|V8_Fatal/.test(String(error))) throw error;
      return this.spawnOnce(entry, ready, extraEnv);
    }
  }

  private spawnOnce(
    entry: string,
    ready: RegExp,
    extraEnv: Record<string, string>,
  ): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
    const child = spawn(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', entry],
      { cwd: ROOT, env: { ...process.env, ...this.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.children.push(child);
    this.outputs.set(child, '');
    return waitUntilReady(child, entry, ready, this.outputs);
  }

  async createUser(name: string, role: 'user' | 'admin' = 'user'): Promise<string> {
    return (await new ApiKeysRepository(this.db).createUserWithKey(name, role)).apiKey;
  }

  /** `npm run user:revoke-key --prefix <prefix>`, as an operator runs it, with this stack's settings. */
  revokeKey(
    prefix: string,
    extraEnv: Record<string, string> = {},
  ): Promise<{ stdout: string; stderr: string }> {
    return promisify(execFile)(
      process.execPath,
      [
        '-r',
        'ts-node/register/transpile-only',
        '-r',
        'tsconfig-paths/register',
        'apps/ops/src/revoke-key.ts',
        '--prefix',
        prefix,
      ],
      { cwd: ROOT, env: { ...process.env, ...this.env, ...extraEnv } },
    );
  }

  async api<T = unknown>(
    method: string,
    url: string,
    options: { body?: unknown; raw?: string; token?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (options.body !== undefined) payload = JSON.stringify(options.body);
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${this.baseUrl}${url}`, { method, headers, body: payload });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: body as T };
  }

  async deliberate(body: unknown, token?: string): Promise<{ conversationId: string; messageId: string }> {
    const response = await this.api<{ conversationId: string; messageId: string }>(
      'POST',
      '/api/deliberations',
      {
        body,
        token,
      },
    );
    if (response.status !== 202)
      throw new Error(`expected 202, got ${response.status}: ${JSON.stringify(response.body)}`);
    return response.body;
  }

  async connect(token?: string): Promise<Socket> {
    const socket = io(`${this.baseUrl}/deliberations`, {
      transports: ['websocket'],
      auth: token ? { token } : {},
      reconnection: false,
    });
    this.sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', (error) => reject(error));
    });
    return socket;
  }

  /**
   * Subscribes and collects events until `complete`, `error` or `cancelled`; with `deltas`, the
   * live `model_delta` / `model_partial` events too (they have no seq).
   */
  async follow(
    messageId: string,
    options: { socket?: Socket; afterSeq?: number; timeoutMs?: number; deltas?: boolean } = {},
  ) {
    const socket = options.socket ?? (await this.connect());
    const events: DeliveredEvent[] = [];
    const done = new Promise<DeliveredEvent[]>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`no terminal event after ${events.map((e) => `${e.seq}:${e.type}`).join(' ')}`)),
        options.timeoutMs ?? 30_000,
      );
      socket.onAny((name: string, event: DeliveredEvent) => {
        if (event?.messageId !== messageId) return;
        events.push(event);
        if (name === 'complete' || name === 'error' || name === 'cancelled') {
          clearTimeout(timer);
          resolve(events);
        }
      });
    });
    // A socket opened here is closed here: open sockets count against MAX_SOCKETS_PER_USER.
    const own = options.socket ? null : socket;
    try {
      const ack = await socket.emitWithAck('subscribe', {
        messageId,
        afterSeq: options.afterSeq ?? 0,
        ...(options.deltas ? { deltas: true } : {}),
      });
      if (!ack?.ok) throw new Error(`subscribe refused: ${JSON.stringify(ack)}`);
      return await done;
    } finally {
      own?.disconnect();
    }
  }

  async run(body: unknown): Promise<{ messageId: string; conversationId: string; events: DeliveredEvent[] }> {
    const accepted = await this.deliberate(body);
    return { ...accepted, events: await this.follow(accepted.messageId) };
  }

  async stageRows(messageId: string) {
    return this.db.query(
      `SELECT stage_type, stage_order, model, role, content, parsed_data, response_time_ms, prompt_tokens,
         completion_tokens, cost_usd FROM deliberation_stages WHERE message_id = $1 ORDER BY stage_order, model`,
      [messageId],
    ) as Promise<StageRowRecord[]>;
  }

  /** The stage queue as BullMQ sees it, on a connection of its own for the time of `work`. */
  async stageQueue<T>(work: (queue: Queue<StageJobData>) => Promise<T>): Promise<T> {
    const connection = new IORedis(this.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue<StageJobData>(STAGE_QUEUE, { connection, prefix: this.config.redisPrefix });
    try {
      return await work(queue);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  }

  queueCounts(): Promise<Record<string, number>> {
    return this.stageQueue((queue) =>
      queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized'),
    );
  }

  /** The names and ids of the stage queue's jobs of one message, in any state, sorted by id. */
  jobsOf(messageId: string): Promise<{ id: string; name: string }[]> {
    return this.stageQueue(async (queue) => {
      const jobs = await queue.getJobs(
        ['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized'],
        0,
        -1,
      );
      return jobs
        .filter((job) => String(job.id).startsWith(`${messageId}__`))
        .map((job) => ({ id: String(job.id), name: job.name }))
        .sort((a, b) => a.id.localeCompare(b.id));
    });
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.disconnect();
    for (const child of this.children) if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(this.workers.map((w) => w.close().catch(() => undefined)));
    await this.app?.close().catch(() => undefined);
    await this.db?.destroy().catch(() => undefined);
    const redis = new IORedis(this.config.redisUrl);
    const keys = await redis.keys(`${this.config.redisPrefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    // On the server of DATABASE_URL (the shared one on 5432, or a test's private cluster).
    await dropDatabases(this.config.databaseUrl);
  }
}

/** 01-council.md §C, for a new conversation. */
/** How many rows each table holds for these conversations. */
export async function rowsOf(
  db: DataSource,
  conversationIds: string[],
): Promise<Record<ConversationTable, number>> {
  const [row]: Record<ConversationTable, number>[] = await db.query(
    `SELECT
       (SELECT count(*)::int FROM conversations WHERE id = ANY($1::uuid[])) AS conversations,
       (SELECT count(*)::int FROM messages WHERE conversation_id = ANY($1::uuid[])) AS messages,
       (SELECT count(*)::int FROM deliberation_stages s JOIN messages m ON m.id = s.message_id
          WHERE m.conversation_id = ANY($1::uuid[])) AS deliberation_stages,
       (SELECT count(*)::int FROM model_calls c JOIN messages m ON m.id = c.message_id
          WHERE m.conversation_id = ANY($1::uuid[])) AS model_calls,
       (SELECT count(*)::int FROM deliberation_events e JOIN messages m ON m.id = e.message_id
          WHERE m.conversation_id = ANY($1::uuid[])) AS deliberation_events`,
    [conversationIds],
  );
  return row;
}

export const COUNCIL_SEQUENCE = [
  'stage1_start',
  'stage1_complete',
  'stage2_start',
  'stage2_complete',
  'stage3_start',
  'stage3_complete',
  'title_complete',
  'complete',
];

/** Extension events that interleave with a mode's own (deviations.md 7 and 10, `resumed`). */
const EXTENSION_EVENTS = new Set(['model_progress', 'model_delta', 'model_partial', 'resumed']);

/** Events without the extension ones (`model_progress`, `resumed`, …): the mode document's sequence. */
export const modeEvents = (events: DeliveredEvent[]) => events.filter((e) => !EXTENSION_EVENTS.has(e.type));

export function expectContiguous(events: DeliveredEvent[], from = 1): void {
  const seqs = events.map((e) => e.seq);
  expect(seqs).toEqual(seqs.map((_, i) => from + i));
}

/**
 * How long a spawned process may take to be ready: ts-node compiles it at start, which takes
 * seconds on an idle host and 25 s on a loaded 2-core one.
 */
export const PROCESS_START_TIMEOUT_MS = 45_000;

/**
 * Resolves once the child's output matches `ready` (with the match), rejects if it exits first or
 * takes longer than PROCESS_START_TIMEOUT_MS. Keeps the last 64 kB of its output in `outputs`:
 * enough to explain a failure, bounded however long the process runs.
 */
export function waitUntilReady(
  child: ChildProcess,
  entry: string,
  ready: RegExp,
  outputs: Map<ChildProcess, string>,
): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${entry} did not start:\n${outputs.get(child)}`)),
      PROCESS_START_TIMEOUT_MS,
    );
    let started = false;
    const onData = (chunk: Buffer) => {
      const output = ((outputs.get(child) ?? '') + chunk.toString()).slice(-65_536);
      outputs.set(child, output);
      const match = started ? null : ready.exec(output);
      if (match) {
        started = true;
        clearTimeout(timer);
        resolve({ child, match });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${entry} exited (${code}):\n${outputs.get(child)}`));
    });
  });
}

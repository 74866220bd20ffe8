import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '@conclave/config';
import { STAGE_QUEUE } from '@conclave/contracts';
import { createDataSource, migrate } from '@conclave/persistence';
import { Queue, type Job } from 'bullmq';
import IORedis from 'ioredis';
import type { DataSource } from 'typeorm';
import { TestStack, waitUntilReady } from '../../test/support/harness';
import type { Runtime } from './build';
import { Follower } from './client';
import type { ProcSampler } from './proc';

/** Where the stacks' PostgreSQL and Redis are. */
export interface Servers {
  kind: 'private' | 'shared';
  /** A database URL on the server for a database name. */
  databaseUrl(name: string): string;
  redisUrl: string;
  /** Processes whose CPU the reports count (the private servers). */
  postgresPid: number | null;
  redisPid: number | null;
}

export interface BenchContext {
  servers: Servers;
  sampler: ProcSampler;
  quick: boolean;
  /** Take a worker CPU profile where a scenario offers one (throughput). */
  profile: boolean;
  /** Compiled JavaScript (as in production) or ts-node (as the tests run it). */
  runtime: Runtime;
  log(message: string): void;
}

/** Settings every benchmark stack shares: no rate limits, fixed latency, room for many batches. */
const BASE_ENV: Record<string, string> = {
  AUTH_MODE: 'none',
  NODE_ENV: 'development',
  LOG_LEVEL: 'info',
  SIM_LATENCY_JITTER: '0',
  RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
  RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '0',
  MAX_ACTIVE_BATCHES_PER_USER: '1000',
  // Every benchmark client is the one local user: fan-out opens a thousand sockets.
  MAX_SOCKETS_PER_USER: '0',
  MAX_SSE_STREAMS_PER_USER: '0',
  MAX_SUBSCRIPTIONS_PER_USER: '0',
  WORKER_HTTP_PORT: '0',
  SCARF_ANALYTICS: 'false',
};

const ACTIVE = new Set<BenchStack>();

/** Stops every stack still running (after a scenario threw, or on Ctrl-C). */
export async function stopActiveStacks(): Promise<void> {
  await Promise.all([...ACTIVE].map((stack) => stack.stop()));
}

export interface Spawned {
  label: string;
  child: ChildProcess;
  baseUrl?: string;
}

/**
 * One isolated Conclave (a TestStack: its own database and Redis prefix) whose gateways and
 * workers are child processes, each tracked by the sampler for RSS and CPU.
 */
export class BenchStack {
  readonly test: TestStack;
  readonly gateways: (Spawned & { baseUrl: string })[] = [];
  readonly workers: Spawned[] = [];
  private readonly followers: Follower[] = [];
  private queueHandle: { queue: Queue; connection: IORedis } | null = null;
  private workerCount = 0;
  private readonly compiledChildren: ChildProcess[] = [];
  private readonly outputs = new Map<ChildProcess, string>();

  constructor(
    private readonly ctx: BenchContext,
    env: Record<string, string>,
  ) {
    this.test = new TestStack({ ...BASE_ENV, REDIS_URL: ctx.servers.redisUrl, ...env });
    // The database is named after the stack's id, as TestStack names its own (it drops it by that name).
    this.test.env.DATABASE_URL = ctx.servers.databaseUrl(`conclave_t_${this.test.id}`);
    this.test.config = loadConfig(this.test.env);
    ACTIVE.add(this);
  }

  get db(): DataSource {
    return this.test.db;
  }

  get baseUrl(): string {
    return this.gateways[0].baseUrl;
  }

  async init(): Promise<this> {
    await migrate(this.test.config.databaseUrl);
    this.test.db = createDataSource(this.test.config.databaseUrl, 6);
    await this.test.db.initialize();
    return this;
  }

  async spawnGateway(extraEnv: Record<string, string> = {}): Promise<Spawned & { baseUrl: string }> {
    const { runtime } = this.ctx;
    const { child, baseUrl } =
      runtime.kind === 'compiled'
        ? await this.spawnCompiled(runtime.gateway, /listening on http:\/\/localhost:(\d+)/, {
            PORT: '0',
            HOST: '127.0.0.1',
            ...extraEnv,
          }).then(({ child, match }) => ({ child, baseUrl: `http://127.0.0.1:${match[1]}` }))
        : await this.test.spawnGateway(extraEnv);
    const spawned = { label: `gateway ${this.gateways.length + 1}`, child, baseUrl };
    this.gateways.push(spawned);
    this.ctx.sampler.track({ label: spawned.label, pid: child.pid ?? 0 });
    return spawned;
  }

  async spawnWorker(extraEnv: Record<string, string> = {}): Promise<Spawned> {
    const { runtime } = this.ctx;
    const child =
      runtime.kind === 'compiled'
        ? (await this.spawnCompiled(runtime.worker, /consuming/, extraEnv)).child
        : await this.test.spawnWorker(extraEnv);
    this.workerCount += 1;
    const spawned = { label: `worker ${this.workerCount}`, child };
    this.workers.push(spawned);
    this.ctx.sampler.track({ label: spawned.label, pid: child.pid ?? 0 });
    return spawned;
  }

  /** Like TestStack's spawned processes, but running the compiled entry point with plain node. */
  private spawnCompiled(
    entry: string,
    ready: RegExp,
    extraEnv: Record<string, string>,
  ): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
    const root = path.resolve(__dirname, '../..');
    const child = spawn(process.execPath, [entry], {
      cwd: root,
      // The build lives outside the repository: its imports resolve from the repository's node_modules.
      env: { ...process.env, ...this.test.env, NODE_PATH: path.join(root, 'node_modules'), ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.compiledChildren.push(child);
    this.outputs.set(child, '');
    // Experiments: everything a process prints, in full, to BENCH_OUTPUT_DIR/<entry's app>-<pid>.log.
    if (process.env.BENCH_OUTPUT_DIR) {
      const app = path.basename(path.dirname(path.dirname(entry)));
      child.stdout?.pipe(
        createWriteStream(path.join(process.env.BENCH_OUTPUT_DIR, `${app}-${child.pid}.log`)),
      );
    }
    return waitUntilReady(child, entry, ready, this.outputs);
  }

  /** Ends a worker: SIGTERM (it drains, and writes a CPU profile if it was started with one), then SIGKILL. */
  async stopWorker(worker: Spawned, graceMs = 20_000): Promise<void> {
    this.ctx.sampler.untrack(worker.label);
    const index = this.workers.indexOf(worker);
    if (index >= 0) this.workers.splice(index, 1);
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => worker.child.once('exit', () => resolve()));
    worker.child.kill('SIGTERM');
    const timer = setTimeout(() => worker.child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  async follower(gateway = 0): Promise<Follower> {
    const follower = await Follower.connect(this.gateways[gateway].baseUrl);
    this.followers.push(follower);
    return follower;
  }

  /** The stage queue, to read completed jobs' timestamps (enqueued, started, finished). */
  queue(): Queue {
    if (!this.queueHandle) {
      const connection = new IORedis(this.test.config.redisUrl, { maxRetriesPerRequest: null });
      this.queueHandle = {
        connection,
        queue: new Queue(STAGE_QUEUE, { connection, prefix: this.test.config.redisPrefix }),
      };
    }
    return this.queueHandle.queue;
  }

  async completedJobs(): Promise<Job[]> {
    return this.queue().getJobs(['completed'], 0, -1);
  }

  /** The output a spawned process wrote (JSON log lines). */
  output(spawned: Spawned): string {
    return this.outputs.get(spawned.child) ?? this.test.outputs.get(spawned.child) ?? '';
  }

  async stop(): Promise<void> {
    if (!ACTIVE.delete(this)) return;
    for (const follower of this.followers) follower.close();
    for (const spawned of [...this.gateways, ...this.workers]) this.ctx.sampler.untrack(spawned.label);
    if (this.queueHandle) {
      await this.queueHandle.queue.close().catch(() => undefined);
      this.queueHandle.connection.disconnect();
    }
    const children = [...this.gateways, ...this.workers].map((s) => s.child);
    const exits = children
      .filter((c) => c.exitCode === null && c.signalCode === null)
      .map((c) => new Promise<void>((resolve) => c.once('exit', () => resolve())));
    for (const child of this.compiledChildren) if (child.exitCode === null) child.kill('SIGKILL');
    await this.test.stop().catch((error: unknown) => this.ctx.log(`stack cleanup: ${String(error)}`));
    await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 10_000))]);
    // TestStack drops its database on the server it knows; make sure it is gone from ours too.
    const admin = createDataSource(this.ctx.servers.databaseUrl('postgres'), 1);
    try {
      await admin.initialize();
      await admin.query(`DROP DATABASE IF EXISTS "conclave_t_${this.test.id}" WITH (FORCE)`);
    } catch (error) {
      this.ctx.log(`could not drop conclave_t_${this.test.id}: ${String(error)}`);
    } finally {
      await admin.destroy().catch(() => undefined);
    }
  }
}

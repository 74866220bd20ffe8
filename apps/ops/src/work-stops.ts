import type { ConclaveConfig } from '@conclave/config';
import {
  BatchDispatcher,
  BatchesRepository,
  OpenWorkRepository,
  TypeOrmDeliberationStore,
  WorkStops,
  type CancelledWork,
} from '@conclave/persistence';
import {
  connectBriefly,
  publishControl,
  RedisBatchQueue,
  RedisEventPublisher,
  StageQueue,
  type RedisClient,
} from '@conclave/redis';
import type { DataSource } from 'typeorm';

/** How long a command-line run waits for Redis before it stops work through PostgreSQL alone. */
const REDIS_TIMEOUT_MS = 3000;

/** WorkStops for a command-line tool: PostgreSQL, and Redis when it answers. */
export interface CliWorkStops {
  stops: WorkStops;
  /** The Redis connection, or null when it could not be reached (why: `redisError`). */
  redis: RedisClient | null;
  redisError: string | null;
  /** Warnings the stops gave (e.g. a publish that failed), for the command's output. */
  warnings: string[];
  close(): Promise<void>;
}

export async function cliWorkStops(config: ConclaveConfig, dataSource: DataSource): Promise<CliWorkStops> {
  const warnings: string[] = [];
  const batches = new BatchesRepository(dataSource);
  let redis: RedisClient | null = null;
  let redisError: string | null = null;
  try {
    redis = await connectBriefly(config, REDIS_TIMEOUT_MS);
  } catch (error) {
    redisError = error instanceof Error ? error.message : String(error);
  }
  const queue = redis
    ? new StageQueue(redis, config.queuePrefix, {
        attempts: config.worker.attempts,
        onError: () => undefined,
      })
    : null;
  const stops = new WorkStops({
    store: new TypeOrmDeliberationStore(dataSource, {
      preparedStatements: config.database.poolMode !== 'transaction',
      warn: (message) => warnings.push(message),
    }),
    batches,
    openWork: new OpenWorkRepository(dataSource),
    redis: redis && queue ? redisSide(redis, config.redisPrefix, queue, batches) : null,
    warn: (message) => warnings.push(message),
  });
  return {
    stops,
    redis,
    redisError,
    warnings,
    async close() {
      await queue?.close().catch(() => undefined);
      redis?.disconnect();
    },
  };
}

/** What a stop does on Redis, with the one event publisher the dispatcher and the stops share. */
function redisSide(client: RedisClient, prefix: string, queue: StageQueue, batches: BatchesRepository) {
  const publisher = new RedisEventPublisher(client, prefix);
  return {
    abortCalls: (messageId: string) => publishControl(client, prefix, { type: 'cancel', messageId }),
    queue,
    publisher,
    dispatcher: new BatchDispatcher(batches, new RedisBatchQueue(queue, client, prefix), publisher),
  };
}

/** "2 deliberations, 1 batch (5 items)": what a cancel stopped, for the command's output. */
export function describeCancelled(done: CancelledWork): string {
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  return (
    `${count(done.deliberations, 'deliberation', 'deliberations')}, ` +
    `${count(done.batches, 'batch', 'batches')} (${count(done.batchItems, 'item', 'items')})`
  );
}

/** The warnings a CLI prints after its cancels: each WorkStops warning, and what Redis being away means. */
export function printWarnings(work: CliWorkStops, alsoWhenRedisIsAway = ''): void {
  for (const warning of work.warnings) console.error(`warning: ${warning}`);
  if (work.redisError === null) return;
  console.error(
    `warning: could not reach Redis (${work.redisError}); the cancels are stored, so no further stage or ` +
      "batch item starts, but calls already running end at their own timeout or when a worker's " +
      `reconciler finds them cancelled (RECONCILE_INTERVAL_MS, 30 s by default)${alsoWhenRedisIsAway}`,
  );
}

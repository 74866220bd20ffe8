import type { RedisClusterSettings } from '@conclave/config';
import IORedis, { Cluster, type ClusterOptions, type Redis, type RedisOptions } from 'ioredis';

export type RedisRole = 'worker' | 'producer' | 'subscriber';

/** A connection to one Redis or to a Redis Cluster: what every part of Conclave talks to. */
export type RedisClient = Redis | Cluster;

/**
 * Where Redis is: REDIS_URL, or REDIS_CLUSTER_NODES when set (ConclaveConfig is one). A URL alone
 * means one Redis.
 */
export type RedisTarget = string | { redisUrl: string; redisCluster: RedisClusterSettings | null };

/** Hears a connection's errors: without a listener ioredis and BullMQ print them with `console`. */
export type ConnectionErrorListener = (error: Error) => void;

export interface CreateRedisOptions {
  /**
   * A subscriber for sharded channels (SSUBSCRIBE): on a cluster it keeps one connection per
   * master, each subscribing to the channels of that master's slots. Nothing changes on one Redis.
   */
  sharded?: boolean;
}

/** Whether a connection is to a Redis Cluster. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis.isCluster;
}

/** What every connection to a cluster's nodes uses: the login and TLS of REDIS_CLUSTER_NODES. */
function nodeOptions(cluster: RedisClusterSettings): RedisOptions {
  return {
    ...(cluster.username ? { username: cluster.username } : {}),
    ...(cluster.password ? { password: cluster.password } : {}),
    ...(cluster.tls ? { tls: {} } : {}),
  };
}

function clusterClient(cluster: RedisClusterSettings, options: ClusterOptions): Cluster {
  return new Cluster(
    cluster.nodes.map((node) => ({ host: node.host, port: node.port })),
    {
      // With TLS, connect to the names given (not the addresses they resolve to), so that the
      // certificate is checked against the name (managed clusters: ElastiCache, Memorystore).
      ...(cluster.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
      ...options,
    },
  );
}

/**
 * Workers block on Redis and must never give up on a command (BullMQ requires
 * `maxRetriesPerRequest: null` of a worker's connection, on one Redis and on every node of a
 * cluster); producers fail fast so the API answers 503 instead of hanging when Redis is down.
 * `onError` hears the connection's errors (each failed reconnection attempt while Redis is away;
 * on a cluster also each node's).
 */
export function createRedis(
  target: string,
  role: RedisRole,
  onError?: ConnectionErrorListener,
  options?: CreateRedisOptions,
): Redis;
export function createRedis(
  target: RedisTarget,
  role: RedisRole,
  onError?: ConnectionErrorListener,
  options?: CreateRedisOptions,
): RedisClient;
export function createRedis(
  target: RedisTarget,
  role: RedisRole,
  onError?: ConnectionErrorListener,
  options: CreateRedisOptions = {},
): RedisClient {
  const cluster = typeof target === 'string' ? null : target.redisCluster;
  if (!cluster) {
    const url = typeof target === 'string' ? target : target.redisUrl;
    const redisOptions: RedisOptions =
      role === 'producer'
        ? { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false }
        : { maxRetriesPerRequest: null };
    const redis = new IORedis(url, redisOptions);
    if (onError) redis.on('error', onError);
    return redis;
  }
  const client = clusterClient(cluster, {
    ...(role === 'producer' ? { enableOfflineQueue: false } : {}),
    ...(options.sharded ? { shardedSubscribers: true } : {}),
    redisOptions: {
      ...nodeOptions(cluster),
      maxRetriesPerRequest: role === 'producer' ? 1 : null,
    },
  });
  if (onError) {
    client.on('error', onError);
    client.on('node error', (error: unknown) =>
      onError(error instanceof Error ? error : new Error(String(error))),
    );
  }
  return client;
}

/**
 * A connection for one short task of a command-line tool: connected (or rejecting) within
 * `timeoutMs`, never retrying; the caller disconnects it.
 */
export async function connectBriefly(target: RedisTarget, timeoutMs: number): Promise<RedisClient> {
  const cluster = typeof target === 'string' ? null : target.redisCluster;
  const once: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  };
  let client: RedisClient;
  if (!cluster) {
    const url = typeof target === 'string' ? target : target.redisUrl;
    client = new IORedis(url, { ...once, lazyConnect: true, retryStrategy: () => null });
  } else {
    const { enableOfflineQueue, ...perNode } = once;
    client = clusterClient(cluster, {
      lazyConnect: true,
      enableOfflineQueue,
      clusterRetryStrategy: () => null,
      slotsRefreshTimeout: timeoutMs,
      redisOptions: { ...nodeOptions(cluster), ...perNode },
    });
  }
  client.on('error', () => undefined); // connect() and the commands reject with it
  try {
    await withTimeout(client.connect(), timeoutMs);
  } catch (error) {
    client.disconnect();
    throw error;
  }
  return client;
}

/**
 * Answers when Redis can take commands, rejects otherwise. On one Redis a PING; on a cluster the
 * state of the cluster (`CLUSTER INFO` says `cluster_state:ok` only while every slot is served),
 * since a node answers PING while the slots of a failed master refuse every command.
 */
export async function redisAnswers(redis: RedisClient): Promise<void> {
  if (!isCluster(redis)) {
    await redis.ping();
    return;
  }
  const info = await redis.cluster('INFO');
  if (!/^cluster_state:ok\s*$/m.test(info)) throw new Error('the Redis Cluster is not ok (cluster_state)');
}

/**
 * The promise's answer, or a rejection ("<what> did not answer within <ms> ms") once `ms` pass
 * without one (the timer holds no process open): the one timeout of Redis calls and readiness probes.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what = 'Redis'): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

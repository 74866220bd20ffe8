import type { RedisClusterSettings } from '@conclave/config';
import { Cluster } from 'ioredis';
import { createRedis, isCluster, withTimeout, type RedisClient } from './connection';

/** Nothing listens on port 1: the clients are built, never connected. */
const CLUSTER: RedisClusterSettings = {
  nodes: [
    { host: '127.0.0.1', port: 1 },
    { host: 'localhost', port: 2 },
  ],
  username: 'app',
  password: 'secret',
  tls: false,
};

describe('createRedis', () => {
  /** A client, disconnected at once (before any retry is scheduled): only its options are looked at. */
  const make = (...args: Parameters<typeof createRedis>): RedisClient => {
    const client = createRedis(...args);
    client.disconnect();
    return client;
  };
  const quiet = () => undefined;

  it('makes one Redis from a URL, or from settings without a cluster, with the options of old', () => {
    const worker = make('redis://127.0.0.1:1', 'worker', quiet);
    expect(isCluster(worker)).toBe(false);
    expect(worker.options).toMatchObject({ host: '127.0.0.1', port: 1, maxRetriesPerRequest: null });
    const producer = make({ redisUrl: 'redis://127.0.0.1:1/3', redisCluster: null }, 'producer', quiet);
    expect(isCluster(producer)).toBe(false);
    expect(producer.options).toMatchObject({ db: 3, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  });

  it('makes a Cluster client from REDIS_CLUSTER_NODES, with what BullMQ needs of a worker on every node', () => {
    const worker = make({ redisUrl: 'unused', redisCluster: CLUSTER }, 'worker', quiet);
    expect(worker).toBeInstanceOf(Cluster);
    const cluster = worker as Cluster;
    expect(cluster.options.redisOptions).toMatchObject({
      username: 'app',
      password: 'secret',
      maxRetriesPerRequest: null,
    });
    expect(cluster.options.redisOptions).not.toHaveProperty('tls');
    expect(cluster.options.enableOfflineQueue).toBe(true);
    expect(cluster.options.shardedSubscribers).toBe(false);
  });

  it('fails a producer fast on a cluster too, and subscribes per shard only when asked', () => {
    const producer = make({ redisUrl: 'unused', redisCluster: CLUSTER }, 'producer', quiet) as Cluster;
    expect(producer.options.enableOfflineQueue).toBe(false);
    expect(producer.options.redisOptions).toMatchObject({ maxRetriesPerRequest: 1 });
    const live = make({ redisUrl: 'unused', redisCluster: { ...CLUSTER, tls: true } }, 'subscriber', quiet, {
      sharded: true,
    }) as Cluster;
    expect(live.options.shardedSubscribers).toBe(true);
    expect(live.options.redisOptions).toMatchObject({ tls: {}, maxRetriesPerRequest: null });
    expect(typeof live.options.dnsLookup).toBe('function');
  });
});

describe('withTimeout', () => {
  it('answers what the promise answers in time, and rejects naming what did not answer otherwise', async () => {
    await expect(withTimeout(Promise.resolve('PONG'), 1000)).resolves.toBe('PONG');
    const never = new Promise<never>(() => undefined);
    await expect(withTimeout(never, 5)).rejects.toThrow('Redis did not answer within 5 ms');
    await expect(withTimeout(never, 5, 'PostgreSQL')).rejects.toThrow(
      'PostgreSQL did not answer within 5 ms',
    );
  });
});

import IORedis, { type Redis, type RedisOptions } from 'ioredis';

export type RedisRole = 'worker' | 'producer' | 'subscriber';

/** Hears a connection's errors: without a listener ioredis and BullMQ print them with `console`. */
export type ConnectionErrorListener = (error: Error) => void;

/**
 * Workers block on Redis and must never give up on a command; producers fail fast so the API
 * answers 503 instead of hanging when Redis is down. `onError` hears the connection's errors
 * (each failed reconnection attempt while Redis is away).
 */
export function createRedis(url: string, role: RedisRole, onError?: ConnectionErrorListener): Redis {
  const options: RedisOptions =
    role === 'producer'
      ? { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false }
      : { maxRetriesPerRequest: null };
  const redis = new IORedis(url, options);
  if (onError) redis.on('error', onError);
  return redis;
}

import type { RedisClient } from './connection';

/**
 * The Redis channel on which revoked key ids are announced to every gateway (`{ keyIds: string[] }`):
 * they close the keys' open sockets and streams at once; without it, within STREAM_KEY_RECHECK_MS.
 */
export const revokedKeysChannel = (redisPrefix: string): string => `${redisPrefix}:api-keys:revoked`;

/** Announces revoked keys to every gateway (revokedKeysChannel). */
export async function announceRevokedKeys(
  redis: RedisClient,
  redisPrefix: string,
  keyIds: readonly string[],
): Promise<void> {
  await redis.publish(revokedKeysChannel(redisPrefix), JSON.stringify({ keyIds }));
}

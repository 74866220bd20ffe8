import { createHash, randomBytes } from 'node:crypto';
import { connectBriefly, type RedisTarget } from '@conclave/redis';

export const API_KEY_PREFIX = 'ck_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys carry 256 random bits, so a plain SHA-256 is enough to store them safely. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The Redis channel on which revoked key ids are announced to every gateway: `{ keyIds: string[] }`. */
export const revokedKeysChannel = (redisPrefix: string): string => `${redisPrefix}:api-keys:revoked`;

/**
 * Tells every gateway that these keys are revoked, so they close the keys' open sockets and streams
 * at once. Throws when Redis cannot be reached within `timeoutMs`; the revocation itself is in
 * PostgreSQL already, and the gateways' periodic recheck (STREAM_KEY_RECHECK_MS) finds it.
 */
export async function announceRevokedKeys(
  redis: RedisTarget,
  redisPrefix: string,
  keyIds: string[],
  timeoutMs = 3000,
): Promise<void> {
  if (keyIds.length === 0) return;
  const connection = await connectBriefly(redis, timeoutMs);
  try {
    await connection.publish(revokedKeysChannel(redisPrefix), JSON.stringify({ keyIds }));
  } finally {
    connection.disconnect();
  }
}

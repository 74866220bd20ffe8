import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'ck_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys carry 256 random bits, so a plain SHA-256 is enough to store them safely. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/**
 * The Redis channel on which revoked key ids are announced to every gateway (`{ keyIds: string[] }`):
 * they close the keys' open sockets and streams at once; without it, within STREAM_KEY_RECHECK_MS.
 */
export const revokedKeysChannel = (redisPrefix: string): string => `${redisPrefix}:api-keys:revoked`;

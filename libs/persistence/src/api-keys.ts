import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import IORedis from 'ioredis';
import type { DataSource } from 'typeorm';

export const API_KEY_PREFIX = 'ck_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys carry 256 random bits, so a plain SHA-256 is enough to store them safely. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export type UserRole = 'user' | 'admin';

/** Creates the user (or finds it) and gives it a new key; `role` is only ever raised, never lowered here. */
export async function createUserWithKey(
  dataSource: DataSource,
  name: string,
  role: UserRole = 'user',
): Promise<{ userId: string; apiKey: string }> {
  const apiKey = generateApiKey();
  return dataSource.transaction(async (manager) => {
    const [user]: { id: string }[] = await manager.query(
      `INSERT INTO users (name, role) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET role = CASE WHEN $2 = 'admin' THEN 'admin' ELSE users.role END
       RETURNING id`,
      [name, role],
    );
    await manager.query('INSERT INTO api_keys (user_id, key_hash, key_prefix) VALUES ($1, $2, $3)', [
      user.id,
      hashApiKey(apiKey),
      apiKey.slice(0, 8),
    ]);
    return { userId: user.id, apiKey };
  });
}

export interface ApiKeyOwner {
  userId: string;
  /** The id of the key's row: what open sockets and streams remember, to be closed when it is revoked. */
  keyId: string;
}

/**
 * The user a key belongs to, and the key's id, or null. Candidates are found by the key's public
 * prefix and their stored hashes compared in constant time, so response timing says nothing about a
 * stored hash.
 */
export async function apiKeyFor(dataSource: DataSource, key: string): Promise<ApiKeyOwner | null> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
  const rows: { id: string; user_id: string; key_hash: string }[] = await dataSource.query(
    'SELECT id, user_id, key_hash FROM api_keys WHERE key_prefix = $1 AND revoked_at IS NULL',
    [key.slice(0, 8)],
  );
  const given = Buffer.from(hashApiKey(key), 'hex');
  const match = rows.find((row) => {
    const stored = Buffer.from(row.key_hash, 'hex');
    return stored.length === given.length && timingSafeEqual(stored, given);
  });
  return match ? { userId: match.user_id, keyId: match.id } : null;
}

/** The user a key belongs to, or null. */
export async function userIdForApiKey(dataSource: DataSource, key: string): Promise<string | null> {
  return (await apiKeyFor(dataSource, key))?.userId ?? null;
}

export type RevokeTarget = { key: string } | { prefix: string } | { user: string };

/** Revokes one key (by its full value or its 8-character prefix) or every key of a user; returns their ids. */
export async function revokeApiKeyIds(dataSource: DataSource, target: RevokeTarget): Promise<string[]> {
  const [sql, value] =
    'key' in target
      ? ['key_hash = $1', hashApiKey(target.key)]
      : 'prefix' in target
        ? ['key_prefix = $1', target.prefix]
        : ['user_id = (SELECT id FROM users WHERE name = $1)', target.user];
  // A CTE, so that the statement is a SELECT: TypeORM answers an UPDATE with [rows, count].
  const rows: { id: string }[] = await dataSource.query(
    `WITH revoked AS (UPDATE api_keys SET revoked_at = now() WHERE ${sql} AND revoked_at IS NULL RETURNING id)
     SELECT id FROM revoked`,
    [value],
  );
  return rows.map((row) => row.id);
}

/** Revokes one key (by its full value or its 8-character prefix) or every key of a user. */
export async function revokeApiKeys(dataSource: DataSource, target: RevokeTarget): Promise<number> {
  return (await revokeApiKeyIds(dataSource, target)).length;
}

/** Which of these key ids are still valid (not revoked, not deleted): one query however many. */
export async function activeApiKeyIds(dataSource: DataSource, keyIds: string[]): Promise<Set<string>> {
  if (keyIds.length === 0) return new Set();
  const rows: { id: string }[] = await dataSource.query(
    'SELECT id FROM api_keys WHERE id = ANY($1::uuid[]) AND revoked_at IS NULL',
    [keyIds],
  );
  return new Set(rows.map((row) => row.id));
}

/** The Redis channel on which revoked key ids are announced to every gateway: `{ keyIds: string[] }`. */
export const revokedKeysChannel = (redisPrefix: string): string => `${redisPrefix}:api-keys:revoked`;

/**
 * Tells every gateway that these keys are revoked, so they close the keys' open sockets and streams
 * at once. Throws when Redis cannot be reached within `timeoutMs`; the revocation itself is in
 * PostgreSQL already, and the gateways' periodic recheck (STREAM_KEY_RECHECK_MS) finds it.
 */
export async function announceRevokedKeys(
  redisUrl: string,
  redisPrefix: string,
  keyIds: string[],
  timeoutMs = 3000,
): Promise<void> {
  if (keyIds.length === 0) return;
  const redis = new IORedis(redisUrl, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined); // connect() and publish() reject with it
  try {
    await redis.connect();
    await redis.publish(revokedKeysChannel(redisPrefix), JSON.stringify({ keyIds }));
  } finally {
    redis.disconnect();
  }
}

export async function isAdmin(dataSource: DataSource, userId: string): Promise<boolean> {
  const [row]: { role: string }[] = await dataSource.query('SELECT role FROM users WHERE id = $1', [userId]);
  return row?.role === 'admin';
}

/** The single user of `AUTH_MODE=none`: the operator of a local install, so an admin. */
export async function ensureLocalUser(dataSource: DataSource): Promise<string> {
  const [user]: { id: string }[] = await dataSource.query(
    `INSERT INTO users (name, role) VALUES ('local', 'admin')
     ON CONFLICT (name) DO UPDATE SET role = 'admin' RETURNING id`,
  );
  return user.id;
}

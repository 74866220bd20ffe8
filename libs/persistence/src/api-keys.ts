import { createHash, randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';

export const API_KEY_PREFIX = 'ck_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys carry 256 random bits, so a plain SHA-256 is enough to store them safely. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export async function createUserWithKey(
  dataSource: DataSource,
  name: string,
): Promise<{ userId: string; apiKey: string }> {
  const apiKey = generateApiKey();
  return dataSource.transaction(async (manager) => {
    const [user]: { id: string }[] = await manager.query(
      `INSERT INTO users (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`,
      [name],
    );
    await manager.query('INSERT INTO api_keys (user_id, key_hash, key_prefix) VALUES ($1, $2, $3)', [
      user.id,
      hashApiKey(apiKey),
      apiKey.slice(0, 8),
    ]);
    return { userId: user.id, apiKey };
  });
}

export async function userIdForApiKey(dataSource: DataSource, key: string): Promise<string | null> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
  const [row]: { user_id: string }[] = await dataSource.query(
    'SELECT user_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashApiKey(key)],
  );
  return row?.user_id ?? null;
}

/** The single user of `AUTH_MODE=none`. */
export async function ensureLocalUser(dataSource: DataSource): Promise<string> {
  const [user]: { id: string }[] = await dataSource.query(
    `INSERT INTO users (name) VALUES ('local') ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`,
  );
  return user.id;
}

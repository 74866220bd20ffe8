import { createHash, randomBytes } from 'node:crypto';
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

export async function userIdForApiKey(dataSource: DataSource, key: string): Promise<string | null> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
  const [row]: { user_id: string }[] = await dataSource.query(
    'SELECT user_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashApiKey(key)],
  );
  return row?.user_id ?? null;
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

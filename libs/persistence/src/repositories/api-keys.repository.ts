import { timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { API_KEY_PREFIX, generateApiKey, hashApiKey } from '../api-keys';
import { ApiKeyEntity, UserEntity, type ApiKeyRecord } from '../entities';

export type UserRole = 'user' | 'admin';

export interface ApiKeyOwner {
  userId: string;
  /** The id of the key's row: what open sockets and streams remember, to be closed when it is revoked. */
  keyId: string;
}

export type RevokeTarget = { key: string } | { prefix: string } | { user: string };

/**
 * Users and their API keys: creating, checking, revoking. SQL stays where TypeORM cannot say it
 * (the user upserts: "raise the role, never lower it" is a CASE in ON CONFLICT ... DO UPDATE) and
 * on the per-request path (`ownerOf`, `activeIds`), where a find would cost more CPU.
 */
export class ApiKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  private get keys() {
    return this.dataSource.getRepository(ApiKeyEntity);
  }

  private get users() {
    return this.dataSource.getRepository(UserEntity);
  }

  /** Creates the user (or finds it) and gives it a new key; `role` is only ever raised, never lowered here. */
  createUserWithKey(name: string, role: UserRole = 'user'): Promise<{ userId: string; apiKey: string }> {
    const apiKey = generateApiKey();
    return this.dataSource.transaction(async (manager) => {
      const [user]: { id: string }[] = await manager.query(
        `INSERT INTO users (name, role) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET role = CASE WHEN $2 = 'admin' THEN 'admin' ELSE users.role END
         RETURNING id`,
        [name, role],
      );
      await manager.insert(ApiKeyEntity, {
        userId: user.id,
        keyHash: hashApiKey(apiKey),
        keyPrefix: apiKey.slice(0, 8),
      });
      return { userId: user.id, apiKey };
    });
  }

  /**
   * The user a key belongs to, and the key's id, or null. Candidates are found by the key's public
   * prefix and their stored hashes compared in constant time, so response timing says nothing about a
   * stored hash.
   */
  async ownerOf(key: string): Promise<ApiKeyOwner | null> {
    if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
    // SQL (every authenticated request runs it): a TypeORM find costs about 0.1 ms more CPU per call.
    const rows: Pick<ApiKeyRecord, 'id' | 'userId' | 'keyHash'>[] = await this.dataSource.query(
      'SELECT id, user_id AS "userId", key_hash AS "keyHash" FROM api_keys WHERE key_prefix = $1 AND revoked_at IS NULL',
      [key.slice(0, 8)],
    );
    const given = Buffer.from(hashApiKey(key), 'hex');
    const match = rows.find((row) => {
      const stored = Buffer.from(row.keyHash, 'hex');
      return stored.length === given.length && timingSafeEqual(stored, given);
    });
    return match ? { userId: match.userId, keyId: match.id } : null;
  }

  /** Revokes one key (by its full value or its 8-character prefix) or every key of a user; returns their ids. */
  async revoke(target: RevokeTarget): Promise<string[]> {
    const [sql, value] =
      'key' in target
        ? ['key_hash = :value', hashApiKey(target.key)]
        : 'prefix' in target
          ? ['key_prefix = :value', target.prefix]
          : ['user_id = (SELECT id FROM users WHERE name = :value)', target.user];
    const { raw } = await this.keys
      .createQueryBuilder()
      .update()
      .set({ revokedAt: () => 'now()' })
      .where(sql, { value })
      .andWhere('revoked_at IS NULL')
      .returning('id')
      .execute();
    return (raw as { id: string }[]).map((row) => row.id);
  }

  /** Which of these key ids are still valid (not revoked, not deleted): one query however many. */
  async activeIds(keyIds: string[]): Promise<Set<string>> {
    if (keyIds.length === 0) return new Set();
    // SQL, like ownerOf: open streams recheck their keys with it.
    const rows: Pick<ApiKeyRecord, 'id'>[] = await this.dataSource.query(
      'SELECT id FROM api_keys WHERE id = ANY($1::uuid[]) AND revoked_at IS NULL',
      [keyIds],
    );
    return new Set(rows.map((row) => row.id));
  }

  async isAdmin(userId: string): Promise<boolean> {
    const user = await this.users.findOne({ select: { role: true }, where: { id: userId } });
    return user?.role === 'admin';
  }

  /** The single user of `AUTH_MODE=none`: the operator of a local install, so an admin. Returns its id. */
  async ensureLocalUser(): Promise<string> {
    const [user]: { id: string }[] = await this.dataSource.query(
      `INSERT INTO users (name, role) VALUES ('local', 'admin')
       ON CONFLICT (name) DO UPDATE SET role = 'admin' RETURNING id`,
    );
    return user.id;
  }
}

import type { DataSource, EntityManager } from 'typeorm';

/** What an Idempotency-Key protects: one user's key in one scope, with the hash of the request it came with. */
export interface IdempotencyKey {
  userId: string;
  scope: 'deliberation' | 'batch';
  key: string;
  requestHash: string;
}

/** The response stored for a key, with the hash of the request that was accepted with it. */
export interface StoredResponse<T> {
  requestHash: string;
  response: T;
}

/** A concurrent request with the same key stored its response first: the transaction was rolled back. */
export class IdempotencyRace extends Error {}

/** The `idempotency_keys` table: read here; written only inside the transaction that creates what a key protects. */
export class IdempotencyRepository {
  constructor(private readonly dataSource: DataSource) {}

  async find<T>(key: Pick<IdempotencyKey, 'userId' | 'scope' | 'key'>): Promise<StoredResponse<T> | null> {
    const [row]: { request_hash: string; response: T }[] = await this.dataSource.query(
      'SELECT request_hash, response FROM idempotency_keys WHERE user_id = $1 AND scope = $2 AND key = $3',
      [key.userId, key.scope, key.key],
    );
    return row ? { requestHash: row.request_hash, response: row.response } : null;
  }
}

/**
 * Stores the response in the caller's transaction; throws IdempotencyRace when a twin stored one
 * first (the caller's transaction then rolls back). For the repositories of this folder only.
 */
export async function recordResponse(
  manager: EntityManager,
  key: IdempotencyKey,
  response: unknown,
): Promise<void> {
  const inserted: unknown[] = await manager.query(
    `INSERT INTO idempotency_keys (user_id, scope, key, request_hash, response) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING RETURNING key`,
    [key.userId, key.scope, key.key, key.requestHash, response],
  );
  if (inserted.length === 0) throw new IdempotencyRace();
}

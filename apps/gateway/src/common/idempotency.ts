import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { ApiError } from './api-error';

export interface IdempotencyContext {
  userId: string;
  scope: 'deliberation' | 'batch';
  key: string;
  requestHash: string;
}

export class IdempotencyRace extends Error {}

export function idempotencyContext(
  userId: string,
  scope: IdempotencyContext['scope'],
  header: string | string[] | undefined,
  request: unknown,
): IdempotencyContext | null {
  if (header === undefined) return null;
  const key = Array.isArray(header) ? header[0] : header;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw ApiError.invalid({ 'Idempotency-Key': 'must be 1 to 255 visible ASCII characters' });
  }
  let text: string;
  try {
    text = JSON.stringify(request) ?? '';
  } catch {
    // Nested thousands of levels deep (the stack overflows): no valid request looks like that.
    throw ApiError.invalid({ body: 'the request nests objects or arrays too deeply' });
  }
  const requestHash = createHash('sha256').update(text).digest('hex');
  return { userId, scope, key, requestHash };
}

/** The response stored for this key, if a request with it was already accepted. */
export async function previousResponse<T>(
  manager: Pick<EntityManager, 'query'>,
  context: IdempotencyContext,
): Promise<T | null> {
  const [row]: { request_hash: string; response: T }[] = await manager.query(
    'SELECT request_hash, response FROM idempotency_keys WHERE user_id = $1 AND scope = $2 AND key = $3',
    [context.userId, context.scope, context.key],
  );
  if (!row) return null;
  if (row.request_hash !== context.requestHash) {
    throw new ApiError(422, 'This Idempotency-Key was already used with a different request');
  }
  return row.response;
}

/** Stored in the transaction that creates what the key protects; a concurrent twin loses. */
export async function recordResponse(
  manager: EntityManager,
  context: IdempotencyContext,
  response: unknown,
): Promise<void> {
  const inserted: unknown[] = await manager.query(
    `INSERT INTO idempotency_keys (user_id, scope, key, request_hash, response) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING RETURNING key`,
    [context.userId, context.scope, context.key, context.requestHash, response],
  );
  if (inserted.length === 0) throw new IdempotencyRace();
}

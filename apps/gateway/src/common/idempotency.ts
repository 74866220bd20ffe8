import { createHash } from 'node:crypto';
import type { IdempotencyKey, IdempotencyRepository } from '@conclave/persistence';
import { ApiError } from './api-error';

export { IdempotencyRace } from '@conclave/persistence';

/** An Idempotency-Key header, checked, with the hash of the request it came with. */
export type IdempotencyContext = IdempotencyKey;

/** What an idempotency key must be (the Idempotency-Key header, a socket's `idempotencyKey`). */
export const IDEMPOTENCY_KEY_RULE = 'must be 1 to 255 visible ASCII characters';

export const isIdempotencyKey = (key: unknown): key is string =>
  typeof key === 'string' && /^[\x21-\x7e]{1,255}$/.test(key);

export function idempotencyContext(
  userId: string,
  scope: IdempotencyContext['scope'],
  header: string | string[] | undefined,
  request: unknown,
): IdempotencyContext | null {
  if (header === undefined) return null;
  const key = Array.isArray(header) ? header[0] : header;
  if (!isIdempotencyKey(key)) {
    throw ApiError.invalid({ 'Idempotency-Key': IDEMPOTENCY_KEY_RULE });
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

/** The response stored for this key, if a request with it was already accepted; 422 if that was another request. */
export async function previousResponse<T>(
  keys: IdempotencyRepository,
  context: IdempotencyContext,
): Promise<T | null> {
  const stored = await keys.find<T>(context);
  if (!stored) return null;
  if (stored.requestHash !== context.requestHash) {
    throw new ApiError(422, 'This Idempotency-Key was already used with a different request');
  }
  return stored.response;
}

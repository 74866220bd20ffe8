import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'ck_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys carry 256 random bits, so a plain SHA-256 is enough to store them safely. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

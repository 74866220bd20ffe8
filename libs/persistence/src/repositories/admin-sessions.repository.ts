import { createHash, randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { ApiKeyOwner } from './api-keys.repository';

/** How long an admin dashboard session lasts from its sign-in. */
export const ADMIN_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Session tokens start with this, so that one is never mistaken for an API key (`ck_`). */
export const ADMIN_SESSION_PREFIX = 'cas_';

const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export interface AdminSession {
  /** The token to hand to the browser; only its hash is stored. */
  token: string;
  expiresAt: Date;
}

/**
 * Sign-in sessions of the admin dashboard: a random token per sign-in, stored hashed, tied to the
 * API key that signed in. A session is valid until it expires or its key is revoked.
 */
export class AdminSessionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Opens a session for the key's owner (and drops every expired session while at it). */
  async open(owner: ApiKeyOwner, ttlMs = ADMIN_SESSION_TTL_MS): Promise<AdminSession> {
    const token = ADMIN_SESSION_PREFIX + randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + ttlMs);
    await this.dataSource.query('DELETE FROM admin_sessions WHERE expires_at <= now()');
    await this.dataSource.query(
      'INSERT INTO admin_sessions (token_hash, api_key_id, user_id, expires_at) VALUES ($1, $2, $3, $4)',
      [hashToken(token), owner.keyId, owner.userId, expiresAt],
    );
    return { token, expiresAt };
  }

  /** The user and key a session token stands for, or null: unknown, expired, or its key revoked. */
  async ownerOf(token: string): Promise<ApiKeyOwner | null> {
    if (!token.startsWith(ADMIN_SESSION_PREFIX) || token.length > 200) return null;
    const [row]: { user_id: string; api_key_id: string }[] = await this.dataSource.query(
      `SELECT s.user_id, s.api_key_id FROM admin_sessions s JOIN api_keys k ON k.id = s.api_key_id
       WHERE s.token_hash = $1 AND s.expires_at > now() AND k.revoked_at IS NULL`,
      [hashToken(token)],
    );
    return row ? { userId: row.user_id, keyId: row.api_key_id } : null;
  }

  /** Ends a session (signing out); nothing happens for an unknown token. */
  async close(token: string): Promise<void> {
    await this.dataSource.query('DELETE FROM admin_sessions WHERE token_hash = $1', [hashToken(token)]);
  }
}

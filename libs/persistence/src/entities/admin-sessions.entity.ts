import { EntitySchema } from 'typeorm';
import { cascadingReference } from './columns';

/** An `admin_sessions` row: a signed-in admin page, by the hash of its cookie's token. */
export interface AdminSessionRecord {
  tokenHash: string;
  apiKeyId: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
}

export const AdminSessionEntity = new EntitySchema<AdminSessionRecord>({
  name: 'AdminSession',
  tableName: 'admin_sessions',
  columns: {
    tokenHash: {
      name: 'token_hash',
      type: 'text',
      primary: true,
      primaryKeyConstraintName: 'admin_sessions_pkey',
    },
    apiKeyId: cascadingReference('admin_sessions', 'api_key_id', 'ApiKey'),
    userId: cascadingReference('admin_sessions', 'user_id', 'User'),
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    expiresAt: { name: 'expires_at', type: 'timestamptz' },
  },
  indices: [
    { name: 'idx_admin_sessions_expiry', columns: ['expiresAt'] },
    { name: 'idx_admin_sessions_key', columns: ['apiKeyId'] },
  ],
});

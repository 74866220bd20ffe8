import { EntitySchema } from 'typeorm';

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
    apiKeyId: {
      name: 'api_key_id',
      type: 'uuid',
      foreignKey: { target: 'ApiKey', name: 'admin_sessions_api_key_id_fkey', onDelete: 'CASCADE' },
    },
    userId: {
      name: 'user_id',
      type: 'uuid',
      foreignKey: { target: 'User', name: 'admin_sessions_user_id_fkey', onDelete: 'CASCADE' },
    },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    expiresAt: { name: 'expires_at', type: 'timestamptz' },
  },
  indices: [
    { name: 'idx_admin_sessions_expiry', columns: ['expiresAt'] },
    { name: 'idx_admin_sessions_key', columns: ['apiKeyId'] },
  ],
});

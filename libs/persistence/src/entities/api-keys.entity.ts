import { EntitySchema } from 'typeorm';
import { cascadingReference, generatedId } from './columns';

/** An `api_keys` row: a user's key, stored as its SHA-256 and its first 8 characters. */
export interface ApiKeyRecord {
  id: string;
  userId: string;
  keyHash: string;
  keyPrefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export const ApiKeyEntity = new EntitySchema<ApiKeyRecord>({
  name: 'ApiKey',
  tableName: 'api_keys',
  columns: {
    id: generatedId('api_keys'),
    userId: cascadingReference('api_keys', 'user_id', 'User'),
    keyHash: { name: 'key_hash', type: 'text' },
    keyPrefix: { name: 'key_prefix', type: 'text' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    revokedAt: { name: 'revoked_at', type: 'timestamptz', nullable: true },
  },
  uniques: [{ name: 'api_keys_key_hash_key', columns: ['keyHash'] }],
  indices: [{ name: 'idx_api_keys_prefix', columns: ['keyPrefix'] }],
});

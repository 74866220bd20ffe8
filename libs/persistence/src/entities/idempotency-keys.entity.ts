import { EntitySchema } from 'typeorm';
import { cascadingReference } from './columns';

/** An `idempotency_keys` row: the response a request with that key was answered with. */
export interface IdempotencyKeyRecord {
  userId: string;
  scope: string;
  key: string;
  requestHash: string;
  response: unknown;
  createdAt: Date;
}

export const IdempotencyKeyEntity = new EntitySchema<IdempotencyKeyRecord>({
  name: 'IdempotencyKey',
  tableName: 'idempotency_keys',
  columns: {
    userId: cascadingReference('idempotency_keys', 'user_id', 'User', {
      primary: true,
      primaryKeyConstraintName: 'idempotency_keys_pkey',
    }),
    scope: { type: 'text', primary: true, primaryKeyConstraintName: 'idempotency_keys_pkey' },
    key: { type: 'text', primary: true, primaryKeyConstraintName: 'idempotency_keys_pkey' },
    requestHash: { name: 'request_hash', type: 'text' },
    response: { type: 'jsonb' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
  },
});

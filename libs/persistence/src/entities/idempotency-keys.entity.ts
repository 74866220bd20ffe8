import { EntitySchema } from 'typeorm';

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
    userId: {
      name: 'user_id',
      type: 'uuid',
      primary: true,
      primaryKeyConstraintName: 'idempotency_keys_pkey',
      foreignKey: { target: 'User', name: 'idempotency_keys_user_id_fkey', onDelete: 'CASCADE' },
    },
    scope: { type: 'text', primary: true, primaryKeyConstraintName: 'idempotency_keys_pkey' },
    key: { type: 'text', primary: true, primaryKeyConstraintName: 'idempotency_keys_pkey' },
    requestHash: { name: 'request_hash', type: 'text' },
    response: { type: 'jsonb' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
  },
});

import type { ModeName } from '@conclave/contracts';
import { EntitySchema } from 'typeorm';

/** A `presets` row: a user's saved mode and request fields, by name. */
export interface PresetRecord {
  userId: string;
  name: string;
  mode: ModeName;
  request: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * The table has no primary key (migration 1764000000000): its identity is the unique
 * (user_id, name), which TypeORM takes as the entity's primary columns here. The schema test
 * (entities.db-spec.ts) reads the primary key from the database, so these two are marked primary
 * only for TypeORM's own bookkeeping and are not checked as a primary key there.
 */
export const PresetEntity = new EntitySchema<PresetRecord>({
  name: 'Preset',
  tableName: 'presets',
  columns: {
    userId: {
      name: 'user_id',
      type: 'uuid',
      primary: true,
      foreignKey: { target: 'User', name: 'presets_user_id_fkey', onDelete: 'CASCADE' },
    },
    name: { type: 'text', primary: true },
    mode: { type: 'text' },
    request: { type: 'jsonb' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    updatedAt: { name: 'updated_at', type: 'timestamptz', default: () => 'now()' },
  },
  uniques: [{ name: 'uq_presets_user_name', columns: ['userId', 'name'] }],
  checks: [
    { name: 'presets_name_check', expression: `name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'` },
    { name: 'presets_request_check', expression: `jsonb_typeof(request) = 'object'` },
  ],
});

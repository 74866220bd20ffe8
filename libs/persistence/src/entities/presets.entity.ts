import type { ModeName } from '@conclave/contracts';
import { EntitySchema } from 'typeorm';
import { cascadingReference } from './columns';

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
 * (user_id, name). TypeORM needs primary columns, so the entity marks those two; nothing here
 * adds the key to the database (the migrations alone build the schema), and entities.db-spec.ts
 * names the key as the one difference TypeORM's schema builder finds.
 */
export const PresetEntity = new EntitySchema<PresetRecord>({
  name: 'Preset',
  tableName: 'presets',
  columns: {
    userId: cascadingReference('presets', 'user_id', 'User', { primary: true }),
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

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 22, presets: a saved mode, roster and options, per user. `request` holds the preset's
 * fields of a deliberation request (`modeConfig`, `councilModels`, `chairmanModel`) as they were
 * saved, validated by the gateway; the name is part of the model id `conclave/preset/<name>`.
 */
export class Presets1764000000000 implements MigrationInterface {
  name = 'Presets1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE presets (
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name text NOT NULL CONSTRAINT presets_name_check CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
      mode text NOT NULL,
      request jsonb NOT NULL CONSTRAINT presets_request_check CHECK (jsonb_typeof(request) = 'object'),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT uq_presets_user_name UNIQUE (user_id, name))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE presets');
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';
import { STAGE_WRITE_FUNCTION } from './stage-write.function';

/** conclave_stage_write, the one-round-trip stage write (stage-write.function.ts). */
export class StageWrite1763820000000 implements MigrationInterface {
  name = 'StageWrite1763820000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(STAGE_WRITE_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP FUNCTION conclave_stage_write(uuid, jsonb)');
  }
}

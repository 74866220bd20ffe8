import type { MigrationInterface, QueryRunner } from 'typeorm';
import { STAGE_WRITE_FUNCTION } from './stage-write.function';

/**
 * Why a model stopped writing (`length`: the answer was cut at the token limit), recorded on the
 * call; conclave_stage_write stores and returns it.
 */
export class CallFinishReason1763840000000 implements MigrationInterface {
  name = 'CallFinishReason1763840000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE model_calls ADD COLUMN IF NOT EXISTS finish_reason text');
    await q.query(STAGE_WRITE_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE model_calls DROP COLUMN finish_reason');
  }
}

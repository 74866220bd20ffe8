import type { MigrationInterface, QueryRunner } from 'typeorm';
import { STAGE_WRITE_FUNCTION } from './stage-write.function';

/**
 * conclave_stage_write becomes the only writer of a stage: 'replaced' answers with the stored
 * outcomes, and the title job's `conversationTitle` goes through it (stage-write.function.ts).
 * Databases that ran 1763820000000 before this text changed get the current function here.
 */
export class StageWriteOnly1763830000000 implements MigrationInterface {
  name = 'StageWriteOnly1763830000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(STAGE_WRITE_FUNCTION);
  }

  async down(): Promise<void> {
    // Nothing to undo: the current function also serves the engine that came before it.
  }
}

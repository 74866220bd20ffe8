import type { MigrationInterface, QueryRunner } from 'typeorm';
import { STAGE_WRITE_1764100000000 } from './1764100000000-event-partitions';

/**
 * Issue 23, CPU per deliberation: conclave_stage_write learns `titleOutcome` (the first stage's job
 * makes the title call beside its own and stores it with them, so no title job loads and writes
 * the message again), `compact` answers (event keys, seqs and times instead of the payloads the
 * engine just sent), and moves the conversation's updated_at only when a message ends, not at every
 * stage. Older engines send neither field and get the answers they expect.
 *
 * It ran the text 1764100000000 ran (both came in one release), frozen there.
 */
export class StageWriteCompact1764200000000 implements MigrationInterface {
  name = 'StageWriteCompact1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(STAGE_WRITE_1764100000000);
  }

  async down(): Promise<void> {
    // Nothing to undo: the function stays what older engines expect when they leave out the new
    // fields; the one change they could see is that a stage move no longer touches the
    // conversation's updated_at (its start and end still do).
  }
}

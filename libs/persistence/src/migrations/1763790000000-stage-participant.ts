import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Debate lets the same model take part twice; its two participants are told apart by their
 * position in the roster, which becomes part of a stage row's write-once key.
 */
export class StageParticipant1763790000000 implements MigrationInterface {
  name = 'StageParticipant1763790000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE deliberation_stages ADD COLUMN participant int NULL');
    await q.query('DROP INDEX uq_deliberation_stages_once');
    await q.query(`CREATE UNIQUE INDEX uq_deliberation_stages_once ON deliberation_stages
      (message_id, stage_type, stage_order, COALESCE(model, ''), COALESCE(role, ''), COALESCE(participant, -1))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX uq_deliberation_stages_once');
    await q.query('ALTER TABLE deliberation_stages DROP COLUMN participant');
    await q.query(`CREATE UNIQUE INDEX uq_deliberation_stages_once ON deliberation_stages
      (message_id, stage_type, stage_order, COALESCE(model, ''), COALESCE(role, ''))`);
  }
}

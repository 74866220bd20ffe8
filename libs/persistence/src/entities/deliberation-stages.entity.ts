import type { StageRow } from '@conclave/deliberation';
import { EntitySchema } from 'typeorm';
import { cascadingReference, generatedId } from './columns';

/**
 * A `deliberation_stages` row: one answer, review, vote, ... of a stage — the StageRow a mode
 * produced, with its keys, its time, and `cost_usd` as the numeric column reads back (a string).
 */
export interface DeliberationStageRecord extends Omit<StageRow, 'costUsd' | 'participant'> {
  id: string;
  messageId: string;
  costUsd: string | null;
  createdAt: Date;
  participant: number | null;
}

/** Written only by conclave_stage_write; read by the stage store and the reports in SQL of their own. */
export const DeliberationStageEntity = new EntitySchema<DeliberationStageRecord>({
  name: 'DeliberationStage',
  tableName: 'deliberation_stages',
  columns: {
    id: generatedId('deliberation_stages'),
    messageId: cascadingReference('deliberation_stages', 'message_id', 'Message'),
    stageType: { name: 'stage_type', type: 'text' },
    stageOrder: { name: 'stage_order', type: 'integer' },
    model: { type: 'text', nullable: true },
    role: { type: 'text', nullable: true },
    content: { type: 'text' },
    parsedData: { name: 'parsed_data', type: 'jsonb', nullable: true },
    responseTimeMs: { name: 'response_time_ms', type: 'integer', nullable: true },
    promptTokens: { name: 'prompt_tokens', type: 'integer', nullable: true },
    completionTokens: { name: 'completion_tokens', type: 'integer', nullable: true },
    costUsd: { name: 'cost_usd', type: 'numeric', nullable: true },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    participant: { type: 'integer', nullable: true },
  },
  indices: [
    { name: 'idx_deliberation_stages_message', columns: ['messageId', 'stageOrder'] },
    // In the database: UNIQUE (message_id, stage_type, stage_order, COALESCE(model, ''),
    // COALESCE(role, ''), COALESCE(participant, -1)) — expressions TypeORM cannot describe, so it
    // leaves this index alone (synchronize: false) and lists its plain columns only.
    {
      name: 'uq_deliberation_stages_once',
      columns: ['messageId', 'stageType', 'stageOrder'],
      unique: true,
      synchronize: false,
    },
  ],
});

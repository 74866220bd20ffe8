import type { BatchStatus } from '@conclave/contracts';
import { EntitySchema } from 'typeorm';
import { cascadingReference, generatedId } from './columns';

/** A `batches` row. */
export interface BatchRecord {
  id: string;
  userId: string;
  name: string | null;
  status: BatchStatus;
  total: number;
  concurrency: number;
  generateTitles: boolean;
  defaults: unknown;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  cancelledAt: Date | null;
  /** numeric: pg answers it as a string; null for no budget. */
  maxCostUsd: string | null;
  apiKeyId: string | null;
}

export const BatchEntity = new EntitySchema<BatchRecord>({
  name: 'Batch',
  tableName: 'batches',
  columns: {
    id: generatedId('batches'),
    userId: cascadingReference('batches', 'user_id', 'User'),
    name: { type: 'text', nullable: true },
    status: { type: 'text' },
    total: { type: 'integer' },
    concurrency: { type: 'integer' },
    generateTitles: { name: 'generate_titles', type: 'boolean', default: false },
    defaults: { type: 'jsonb', nullable: true },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    startedAt: { name: 'started_at', type: 'timestamptz', nullable: true },
    finishedAt: { name: 'finished_at', type: 'timestamptz', nullable: true },
    cancelledAt: { name: 'cancelled_at', type: 'timestamptz', nullable: true },
    maxCostUsd: { name: 'max_cost_usd', type: 'numeric', nullable: true },
    // No foreign key: keys are revoked, never deleted (migration 1764450000000).
    apiKeyId: { name: 'api_key_id', type: 'uuid', nullable: true },
  },
  indices: [
    // (user_id, created_at DESC) in the database.
    { name: 'idx_batches_user', columns: ['userId', 'createdAt'] },
    {
      name: 'idx_batches_open_by_key',
      columns: ['apiKeyId'],
      where: 'api_key_id IS NOT NULL AND finished_at IS NULL',
    },
  ],
  checks: [
    {
      name: 'batches_status_check',
      expression: `status IN ('queued', 'running', 'complete', 'cancelled', 'budget_exhausted')`,
    },
    { name: 'batches_max_cost_check', expression: 'max_cost_usd IS NULL OR max_cost_usd > 0' },
  ],
});

import { EntitySchema } from 'typeorm';
import { cascadingReference } from './columns';

/** A `removed_spend` row: what a user's deleted conversations' calls cost in a month (budgets). */
export interface RemovedSpendRecord {
  userId: string;
  /** A date (the month's first day): pg answers `date` as a string. */
  month: string;
  costUsd: string;
}

export const RemovedSpendEntity = new EntitySchema<RemovedSpendRecord>({
  name: 'RemovedSpend',
  tableName: 'removed_spend',
  columns: {
    userId: cascadingReference('removed_spend', 'user_id', 'User', {
      primary: true,
      primaryKeyConstraintName: 'removed_spend_pkey',
    }),
    month: { type: 'date', primary: true, primaryKeyConstraintName: 'removed_spend_pkey' },
    costUsd: { name: 'cost_usd', type: 'numeric', default: 0 },
  },
});

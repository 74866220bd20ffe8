import { EntitySchema } from 'typeorm';

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
    userId: {
      name: 'user_id',
      type: 'uuid',
      primary: true,
      primaryKeyConstraintName: 'removed_spend_pkey',
      foreignKey: { target: 'User', name: 'removed_spend_user_id_fkey', onDelete: 'CASCADE' },
    },
    month: { type: 'date', primary: true, primaryKeyConstraintName: 'removed_spend_pkey' },
    costUsd: { name: 'cost_usd', type: 'numeric', default: 0 },
  },
});

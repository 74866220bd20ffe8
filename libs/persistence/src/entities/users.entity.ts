import { EntitySchema } from 'typeorm';
import { generatedId } from './columns';

/** A `users` row. */
export interface UserRecord {
  id: string;
  name: string;
  createdAt: Date;
  role: 'user' | 'admin';
  /** numeric: pg answers it as a string; null when the user has no monthly budget. */
  monthlyBudgetUsd: string | null;
}

export const UserEntity = new EntitySchema<UserRecord>({
  name: 'User',
  tableName: 'users',
  columns: {
    id: generatedId('users'),
    name: { type: 'text' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    role: { type: 'text', default: 'user' },
    monthlyBudgetUsd: { name: 'monthly_budget_usd', type: 'numeric', nullable: true },
  },
  uniques: [{ name: 'users_name_key', columns: ['name'] }],
  checks: [
    { name: 'users_role_check', expression: `role IN ('user', 'admin')` },
    {
      name: 'users_monthly_budget_check',
      expression: 'monthly_budget_usd IS NULL OR monthly_budget_usd >= 0',
    },
  ],
});

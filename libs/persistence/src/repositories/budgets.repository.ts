import type { DataSource, EntityManager } from 'typeorm';
import { returnedRows } from '../deliberation.store';

/** The first instant of the current calendar month in UTC, as SQL. */
const MONTH_START = `(date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;

export interface UserBudget {
  userId: string;
  name: string;
  /** Null: no monthly budget. */
  monthlyBudgetUsd: number | null;
}

/**
 * Per-user monthly budgets (set by an admin) and what a user has spent this calendar month (UTC):
 * the recorded cost of the model calls of their conversations made since the month began, plus
 * what the calls of conversations deleted since cost (removed_spend), so deleting does not refund.
 */
export class BudgetsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Sets (or, with null, clears) the monthly budget of the user named `name`; null when there is no such user. */
  async setMonthlyBudget(name: string, monthlyBudgetUsd: number | null): Promise<UserBudget | null> {
    const [row] = returnedRows<{ id: string; name: string; monthly_budget_usd: string | null }>(
      await this.dataSource.query(
        `UPDATE users SET monthly_budget_usd = $2 WHERE name = $1 RETURNING id, name, monthly_budget_usd`,
        [name, monthlyBudgetUsd],
      ),
    );
    return row ? toBudget(row) : null;
  }

  /** The user named `name` and their budget; null when there is no such user. */
  async byName(name: string): Promise<UserBudget | null> {
    const [row]: { id: string; name: string; monthly_budget_usd: string | null }[] =
      await this.dataSource.query('SELECT id, name, monthly_budget_usd FROM users WHERE name = $1', [name]);
    return row ? toBudget(row) : null;
  }

  /** The user's monthly budget in US dollars; null when none is set. */
  async monthlyBudget(userId: string): Promise<number | null> {
    const [row]: { monthly_budget_usd: string | null }[] = await this.dataSource.query(
      'SELECT monthly_budget_usd FROM users WHERE id = $1',
      [userId],
    );
    return row?.monthly_budget_usd == null ? null : Number(row.monthly_budget_usd);
  }

  /** What the user's model calls have cost this calendar month (UTC), deleted conversations included. */
  async spentThisMonth(userId: string): Promise<number> {
    const [row]: { spent: string | null }[] = await this.dataSource.query(
      `SELECT COALESCE((
           SELECT SUM(mc.cost_usd) FROM model_calls mc
           JOIN messages m ON m.id = mc.message_id
           JOIN conversations c ON c.id = m.conversation_id
           WHERE c.user_id = $1 AND mc.created_at >= ${MONTH_START}), 0)
         + COALESCE((
           SELECT cost_usd FROM removed_spend
           WHERE user_id = $1 AND month = (date_trunc('month', now() AT TIME ZONE 'UTC'))::date), 0) AS spent`,
      [userId],
    );
    return Number(row?.spent ?? 0);
  }
}

const toBudget = (row: { id: string; name: string; monthly_budget_usd: string | null }): UserBudget => ({
  userId: row.id,
  name: row.name,
  monthlyBudgetUsd: row.monthly_budget_usd === null ? null : Number(row.monthly_budget_usd),
});

/**
 * Inside a conversation's deletion: keeps what its model calls cost, per month, in removed_spend,
 * so the user's monthly spend does not drop when conversations are deleted.
 */
export async function keepRemovedSpend(
  manager: EntityManager,
  userId: string,
  conversationId: string,
): Promise<void> {
  await manager.query(
    `INSERT INTO removed_spend (user_id, month, cost_usd)
     SELECT $2, (date_trunc('month', mc.created_at AT TIME ZONE 'UTC'))::date AS month, SUM(mc.cost_usd)
     FROM model_calls mc JOIN messages m ON m.id = mc.message_id JOIN conversations c ON c.id = m.conversation_id
     WHERE c.id = $1 AND c.user_id = $2 AND mc.cost_usd > 0
     GROUP BY 2
     ON CONFLICT (user_id, month) DO UPDATE SET cost_usd = removed_spend.cost_usd + EXCLUDED.cost_usd`,
    [conversationId, userId],
  );
}

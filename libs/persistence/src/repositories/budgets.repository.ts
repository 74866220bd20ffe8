import type { DataSource, EntityManager } from 'typeorm';
import { UserEntity, type UserRecord } from '../entities';

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

  private get users() {
    return this.dataSource.getRepository(UserEntity);
  }

  /** Sets (or, with null, clears) the monthly budget of the user named `name`; null when there is no such user. */
  async setMonthlyBudget(name: string, monthlyBudgetUsd: number | null): Promise<UserBudget | null> {
    // One statement, UPDATE ... RETURNING: what it answers is the row it wrote.
    const { raw } = await this.users
      .createQueryBuilder()
      .update()
      .set({ monthlyBudgetUsd: monthlyBudgetUsd === null ? null : String(monthlyBudgetUsd) })
      .where({ name })
      .returning('id, name, monthly_budget_usd AS "monthlyBudgetUsd"')
      .execute();
    const [row] = raw as Pick<UserRecord, 'id' | 'name' | 'monthlyBudgetUsd'>[];
    return row ? toBudget(row) : null;
  }

  /** The user named `name` and their budget; null when there is no such user. */
  async byName(name: string): Promise<UserBudget | null> {
    const user = await this.users.findOne({
      select: { id: true, name: true, monthlyBudgetUsd: true },
      where: { name },
    });
    return user ? toBudget(user) : null;
  }

  /** The user's monthly budget in US dollars; null when none is set. */
  async monthlyBudget(userId: string): Promise<number | null> {
    // SQL (every new deliberation, batch and retry checks the budget): a TypeORM find costs about
    // 0.1 ms more CPU per call.
    const [user]: Pick<UserRecord, 'monthlyBudgetUsd'>[] = await this.dataSource.query(
      'SELECT monthly_budget_usd AS "monthlyBudgetUsd" FROM users WHERE id = $1',
      [userId],
    );
    return user?.monthlyBudgetUsd == null ? null : Number(user.monthlyBudgetUsd);
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

const toBudget = (user: Pick<UserRecord, 'id' | 'name' | 'monthlyBudgetUsd'>): UserBudget => ({
  userId: user.id,
  name: user.name,
  monthlyBudgetUsd: user.monthlyBudgetUsd === null ? null : Number(user.monthlyBudgetUsd),
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

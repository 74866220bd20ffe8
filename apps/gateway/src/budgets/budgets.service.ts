import { Injectable } from '@nestjs/common';
import type { UserBudgetStatus, UserBudgetView } from '@conclave/contracts';
import { ApiKeysRepository, BudgetsRepository } from '@conclave/persistence';
import { USER_NAME } from '../common/user-name';
import { ApiError } from '../common/api-error';

/** Dollars as people read them: cents, or four decimals below a cent. */
export const usd = (value: number): string => (Math.abs(value) >= 0.01 ? value.toFixed(2) : value.toFixed(4));
const roundUsd = (value: number) => Math.round(value * 1e6) / 1e6;

/** A number of dollars an admin may set: finite, zero or more (zero stops every new deliberation). */
const isBudget = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 1e9;

/**
 * Per-user monthly budgets: an admin sets one; a user whose recorded cost this calendar month (UTC)
 * is at or over it gets 402 for new deliberations, batches and retries (running work goes on).
 */
@Injectable()
export class BudgetsService {
  constructor(
    private readonly budgets: BudgetsRepository,
    private readonly apiKeys: ApiKeysRepository,
  ) {}

  /** The user's budget and spend; null when no budget is set (the spend is then not summed). */
  async status(userId: string): Promise<UserBudgetStatus | null> {
    const monthlyBudgetUsd = await this.budgets.monthlyBudget(userId);
    if (monthlyBudgetUsd === null) return null;
    const spent = roundUsd(await this.budgets.spentThisMonth(userId));
    return { monthlyBudgetUsd, spentThisMonthUsd: spent, overBudget: spent >= monthlyBudgetUsd };
  }

  /** 402 when the user's monthly budget is spent. */
  async assertWithinBudget(userId: string, what: string): Promise<void> {
    const status = await this.status(userId);
    if (!status?.overBudget) return;
    throw new ApiError(
      402,
      `Monthly budget reached: your budget is $${usd(status.monthlyBudgetUsd)} a month and $${usd(status.spentThisMonthUsd)} ` +
        `is recorded this month (UTC), so ${what} was not started. Ask an admin to raise the budget, or wait for the next month.`,
    );
  }

  async assertAdmin(userId: string): Promise<void> {
    if (!(await this.apiKeys.isAdmin(userId)))
      throw new ApiError(403, 'Setting budgets is for admin keys only');
  }

  async view(name: string): Promise<UserBudgetView> {
    const user = USER_NAME.test(name) ? await this.budgets.byName(name) : null;
    if (!user) throw ApiError.notFound(`user ${name.slice(0, 100)}`);
    return {
      user: user.name,
      monthlyBudgetUsd: user.monthlyBudgetUsd,
      spentThisMonthUsd: roundUsd(await this.budgets.spentThisMonth(user.userId)),
    };
  }

  /** Sets (a number) or removes (null) a user's monthly budget; the body is `{ monthlyBudgetUsd }`. */
  async set(name: string, body: unknown): Promise<UserBudgetView> {
    const input = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : null;
    if (!input) throw ApiError.invalid({ body: 'the request body must be a JSON object' });
    // Entries, not assignments: a field named `__proto__` is refused like any other unknown one.
    const fields: [string, string][] = Object.keys(input)
      .filter((key) => key !== 'monthlyBudgetUsd')
      .map((key) => [key.slice(0, 100), `property ${key.slice(0, 100)} should not exist`]);
    const value = (input as Record<string, unknown>).monthlyBudgetUsd;
    if (value !== null && !isBudget(value))
      fields.push([
        'monthlyBudgetUsd',
        'monthlyBudgetUsd must be a number of US dollars from 0 to 1000000000, or null for no budget',
      ]);
    if (fields.length > 0) throw ApiError.invalid(Object.fromEntries(fields));
    const user = USER_NAME.test(name)
      ? await this.budgets.setMonthlyBudget(name, value as number | null)
      : null;
    if (!user) throw ApiError.notFound(`user ${name.slice(0, 100)}`);
    return this.view(name);
  }
}

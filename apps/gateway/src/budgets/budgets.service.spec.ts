import type { INestApplicationContext } from '@nestjs/common';
import { ApiKeysRepository, BudgetsRepository, type UserBudget } from '@conclave/persistence';
import { serviceContext } from '../../../../test/support/nest';
import { ApiError } from '../common/api-error';
import { BudgetsService } from './budgets.service';

/** BudgetsRepository and ApiKeysRepository as a table of users in memory. */
class FakeUsers {
  readonly users = new Map<string, UserBudget & { admin: boolean; spent: number }>();

  add(name: string, options: { admin?: boolean; spent?: number; budget?: number | null } = {}): string {
    const userId = `id-${name}`;
    this.users.set(name, {
      userId,
      name,
      admin: options.admin ?? false,
      spent: options.spent ?? 0,
      monthlyBudgetUsd: options.budget ?? null,
    });
    return userId;
  }

  private byId(userId: string) {
    return [...this.users.values()].find((u) => u.userId === userId) ?? null;
  }

  readonly budgets: Partial<BudgetsRepository> = {
    monthlyBudget: async (userId) => this.byId(userId)?.monthlyBudgetUsd ?? null,
    spentThisMonth: async (userId) => this.byId(userId)?.spent ?? 0,
    byName: async (name) => {
      const user = this.users.get(name);
      return user ? { userId: user.userId, name: user.name, monthlyBudgetUsd: user.monthlyBudgetUsd } : null;
    },
    setMonthlyBudget: async (name, monthlyBudgetUsd) => {
      const user = this.users.get(name);
      if (!user) return null;
      user.monthlyBudgetUsd = monthlyBudgetUsd;
      return { userId: user.userId, name, monthlyBudgetUsd };
    },
  };

  readonly apiKeys: Partial<ApiKeysRepository> = {
    isAdmin: async (userId) => this.byId(userId)?.admin ?? false,
  };
}

/** The error a call rejects with, as the client would get it (status and body). */
async function failure(call: Promise<unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return { status: error.getStatus(), body: error.getResponse() as Record<string, unknown> };
}

describe('BudgetsService (Nest context, fake repositories)', () => {
  let context: INestApplicationContext;
  let users: FakeUsers;
  let service: BudgetsService;

  beforeEach(async () => {
    users = new FakeUsers();
    context = await serviceContext([
      BudgetsService,
      { provide: BudgetsRepository, useValue: users.budgets },
      { provide: ApiKeysRepository, useValue: users.apiKeys },
    ]);
    service = context.get(BudgetsService);
  });

  afterEach(() => context.close());

  it('has no status for a user without a budget, and lets them start work', async () => {
    const userId = users.add('ada', { spent: 50 });
    expect(await service.status(userId)).toBeNull();
    await expect(service.assertWithinBudget(userId, 'this deliberation')).resolves.toBeUndefined();
  });

  it('answers 402 once the month’s spend reaches the budget, naming both in dollars', async () => {
    const under = users.add('bob', { budget: 5, spent: 4.999 });
    const at = users.add('cy', { budget: 5, spent: 5.0000004 });
    expect(await service.status(under)).toEqual({
      monthlyBudgetUsd: 5,
      spentThisMonthUsd: 4.999,
      overBudget: false,
    });
    await expect(service.assertWithinBudget(under, 'this deliberation')).resolves.toBeUndefined();
    expect(await service.status(at)).toEqual({ monthlyBudgetUsd: 5, spentThisMonthUsd: 5, overBudget: true });
    expect(await failure(service.assertWithinBudget(at, 'this batch'))).toEqual({
      status: 402,
      body: {
        statusCode: 402,
        error: 'Payment Required',
        message:
          'Monthly budget reached: your budget is $5.00 a month and $5.00 is recorded this month (UTC), so this ' +
          'batch was not started. Ask an admin to raise the budget, or wait for the next month.',
      },
    });
  });

  it('lets admins only set budgets', async () => {
    const admin = users.add('root', { admin: true });
    const user = users.add('eve');
    await expect(service.assertAdmin(admin)).resolves.toBeUndefined();
    expect((await failure(service.assertAdmin(user))).status).toBe(403);
  });

  it('sets, shows and removes a budget; refuses unknown fields, bad amounts and unknown users', async () => {
    users.add('dee', { spent: 0.0012345 });
    expect(await service.set('dee', { monthlyBudgetUsd: 12.5 })).toEqual({
      user: 'dee',
      monthlyBudgetUsd: 12.5,
      spentThisMonthUsd: 0.001235,
    });
    expect(users.users.get('dee')?.monthlyBudgetUsd).toBe(12.5);
    expect(await service.set('dee', { monthlyBudgetUsd: null })).toMatchObject({ monthlyBudgetUsd: null });

    const invalid = await failure(service.set('dee', { monthlyBudgetUsd: -1, extra: true }));
    expect(invalid.status).toBe(400);
    expect(invalid.body.fields).toEqual({
      extra: 'property extra should not exist',
      monthlyBudgetUsd:
        'monthlyBudgetUsd must be a number of US dollars from 0 to 1000000000, or null for no budget',
    });
    expect((await failure(service.set('dee', [1]))).status).toBe(400);
    expect(users.users.get('dee')?.monthlyBudgetUsd).toBeNull();

    expect(await failure(service.set('nobody', { monthlyBudgetUsd: 1 }))).toMatchObject({
      status: 404,
      body: { message: 'user nobody not found' },
    });
    expect((await failure(service.view('not a name!'))).status).toBe(404);
  });
});

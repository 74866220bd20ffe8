import { Body, Get, Param, Put } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import type { UserBudgetStatus, UserBudgetView } from '@conclave/contracts';
import { ApiKeyController } from '../auth/api-key-controller';
import { ApiAdminUserResponses } from '../auth/admin-routes';
import { CurrentUser } from '../auth/auth.guard';
import { BudgetsService } from './budgets.service';

@ApiKeyController('budgets', '/')
export class BudgetsController {
  constructor(private readonly budgets: BudgetsService) {}

  @Get('budget')
  @ApiOperation({
    summary: 'Your monthly budget and what you have spent this calendar month (UTC)',
    description: '`monthlyBudgetUsd` is null when no budget is set (nothing then stops you).',
  })
  async own(@CurrentUser() userId: string): Promise<UserBudgetStatus | { monthlyBudgetUsd: null }> {
    return (await this.budgets.status(userId)) ?? { monthlyBudgetUsd: null };
  }

  @Get('admin/users/:name/budget')
  @ApiOperation({ summary: "Admin: a user's monthly budget and this month's spend" })
  @ApiAdminUserResponses()
  async view(@CurrentUser() userId: string, @Param('name') name: string): Promise<UserBudgetView> {
    await this.budgets.assertAdmin(userId);
    return this.budgets.view(name);
  }

  @Put('admin/users/:name/budget')
  @ApiOperation({
    summary: "Admin: set a user's monthly budget",
    description:
      'Body `{ "monthlyBudgetUsd": 20 }` (US dollars, 0 or more) or `{ "monthlyBudgetUsd": null }` to remove it. ' +
      "Once the user's recorded cost this calendar month (UTC) is at or over it, their new deliberations, " +
      'batches and retries answer 402; work already running goes on. Same as `npm run user:budget -- --user <name> --usd 20`.',
  })
  @ApiOkResponse({ description: '`{ user, monthlyBudgetUsd, spentThisMonthUsd }`' })
  @ApiAdminUserResponses()
  async set(
    @CurrentUser() userId: string,
    @Param('name') name: string,
    @Body() body: unknown,
  ): Promise<UserBudgetView> {
    await this.budgets.assertAdmin(userId);
    return this.budgets.set(name, body);
  }
}

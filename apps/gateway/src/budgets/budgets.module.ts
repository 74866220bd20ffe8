import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { BudgetsController } from './budgets.controller';
import { BudgetsService } from './budgets.service';

/** Spending budgets: GET /api/budget, an admin's GET/PUT of a user's; BudgetsService for starts. */
@Module({
  imports: [AuthModule],
  controllers: [BudgetsController],
  providers: [BudgetsService],
  exports: [BudgetsService],
})
export class BudgetsModule {}

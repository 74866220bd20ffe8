import { Module } from '@nestjs/common';
import { BudgetsModule } from '../budgets/budgets.module';
import { ModelsModule } from '../models/models.module';
import { DryRunService } from './dry-run.service';

/** Dry runs (`?dryRun=true` on a deliberation or a batch): figures, duration bounds, budget. */
@Module({
  imports: [ModelsModule, BudgetsModule],
  providers: [DryRunService],
  exports: [DryRunService],
})
export class EstimatesModule {}

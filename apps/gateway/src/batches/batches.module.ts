import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { BudgetsModule } from '../budgets/budgets.module';
import { DeliberationsModule } from '../deliberations/deliberations.module';
import { EstimatesModule } from '../estimates/estimates.module';
import { PresetsModule } from '../presets/presets.module';
import { BatchHub } from './batch-hub';
import { BatchesController } from './batches.controller';
import { BatchesService } from './batches.service';
import { ReportsModule } from './reports.module';

/** Batches: /api/batches (submit, list, cancel, retry, results, report, compare); their progress hub. */
@Module({
  imports: [AuthModule, DeliberationsModule, BudgetsModule, EstimatesModule, PresetsModule, ReportsModule],
  controllers: [BatchesController],
  providers: [BatchesService, BatchHub],
  exports: [BatchesService, BatchHub],
})
export class BatchesModule {}

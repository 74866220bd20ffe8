import { Module } from '@nestjs/common';
import { BatchReportService } from './batch-report';

/**
 * Batch reports and comparisons (BatchReportService): computed from the stored rows in a bounded
 * number of slots, answers cached per gateway. Served by BatchesController.
 */
@Module({ providers: [BatchReportService], exports: [BatchReportService] })
export class ReportsModule {}

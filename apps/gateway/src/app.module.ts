import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { ConclaveConfig } from '@conclave/config';
import type { StageQueue } from '@conclave/redis';
import { ApiKeyGuard } from './auth/auth.guard';
import { BatchHub } from './batches/batch-hub';
import { BatchesController } from './batches/batches.controller';
import { BatchesService } from './batches/batches.service';
import { AuthService } from './auth/auth.service';
import { ConversationsController } from './conversations/conversations.controller';
import { DeliberationsController } from './deliberations/deliberations.controller';
import { DeliberationsService } from './deliberations/deliberations.service';
import { RequestValidator } from './deliberations/request-validator';
import { DeliberationsGateway } from './events/deliberations.gateway';
import { EventHub } from './events/event-hub';
import { StreamRegistry } from './events/stream-registry';
import { HealthController } from './health/health.controller';
import { ModesController } from './modes/modes.controller';
import { Metrics } from '@conclave/observability';
import { DataSource } from 'typeorm';
import { ProbesController } from './ops/probes.controller';
import { RateLimiter } from './common/rate-limiter';
import { ConfigModule, METRICS, PersistenceModule, QueueModule, STAGE_QUEUE } from '@conclave/platform';

@Module({})
export class AppModule {
  static register(config: ConclaveConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        PersistenceModule.forRoot(config),
        QueueModule.forRoot(config),
        TerminusModule,
      ],
      controllers: [
        DeliberationsController,
        ConversationsController,
        BatchesController,
        ModesController,
        HealthController,
        ProbesController,
      ],
      providers: [
        {
          provide: METRICS,
          inject: [STAGE_QUEUE, DataSource],
          useFactory: (queue: StageQueue, dataSource: DataSource) => {
            const metrics = new Metrics('gateway');
            metrics.onScrape('conclave_queue_jobs', async () => {
              const states = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed'] as const;
              const counts = await queue.queue.getJobCounts(...states);
              for (const state of states)
                metrics.queueJobs.set({ queue: queue.queue.name, state }, counts[state] ?? 0);
            });
            metrics.onScrape('conclave_active_deliberations', async () => {
              const rows: { status: string; n: number }[] = await dataSource.query(
                `SELECT status, count(*)::int AS n FROM messages
                 WHERE role = 'assistant' AND status IN ('queued', 'running') GROUP BY status`,
              );
              for (const status of ['queued', 'running'])
                metrics.activeDeliberations.set({ status }, rows.find((r) => r.status === status)?.n ?? 0);
            });
            return metrics;
          },
        },
        AuthService,
        RateLimiter,
        ApiKeyGuard,
        RequestValidator,
        DeliberationsService,
        EventHub,
        StreamRegistry,
        BatchesService,
        BatchHub,
        DeliberationsGateway,
      ],
    };
  }
}

import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { ConclaveConfig } from '@conclave/config';
import type { StageQueue } from '@conclave/redis';
import { ApiKeyGuard } from './auth/auth.guard';
import { StreamTickets } from './auth/stream-tickets';
import { BatchHub } from './batches/batch-hub';
import { BatchReportService } from './batches/batch-report';
import { BatchesController } from './batches/batches.controller';
import { BatchesService } from './batches/batches.service';
import { BudgetsController } from './budgets/budgets.controller';
import { BudgetsService } from './budgets/budgets.service';
import { DryRunService } from './estimates/dry-run.service';
import { AuthService } from './auth/auth.service';
import { ConversationsController } from './conversations/conversations.controller';
import { DeliberationsController } from './deliberations/deliberations.controller';
import { DeliberationsService } from './deliberations/deliberations.service';
import { CancelService } from './deliberations/cancel.service';
import { RequestValidator } from './deliberations/request-validator';
import { DeliberationsGateway } from './events/deliberations.gateway';
import { EventHub } from './events/event-hub';
import { LiveHub } from './events/live-hub';
import { StreamRegistry } from './events/stream-registry';
import { HealthController } from './health/health.controller';
import { ModesController } from './modes/modes.controller';
import { ModelsController, ModelsModule } from './models';
import { MCP_CONTROLLERS, MCP_PROVIDERS } from './mcp';
import { OPENAI_CONTROLLERS, OPENAI_PROVIDERS } from './openai';
import { PresetsController, PresetsModule } from './presets';
import type { Metrics } from '@conclave/observability';
import { DeliberationsRepository } from '@conclave/persistence';
import { LifecycleQueueView } from './ops/admin';
import { AdminWorkController } from './ops/admin-work.controller';
import { ProbesController } from './ops/probes.controller';
import { RateLimiter } from './common/rate-limiter';
import { PublicUrl } from './common/public-url';
import { QueryParamsInterceptor } from './common/query-params';
import { APP_INTERCEPTOR } from '@nestjs/core';
import {
  ConfigModule,
  METRICS,
  ObservabilityModule,
  PersistenceModule,
  QueueModule,
  STAGE_QUEUE,
} from '@conclave/platform';

@Module({})
export class AppModule {
  static register(config: ConclaveConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        ObservabilityModule.forRoot(config, 'gateway'),
        PersistenceModule.forRoot(config),
        QueueModule.forRoot(config),
        TerminusModule,
        ModelsModule,
        PresetsModule,
      ],
      controllers: [
        DeliberationsController,
        ConversationsController,
        BatchesController,
        BudgetsController,
        AdminWorkController,
        ModesController,
        ModelsController,
        PresetsController,
        HealthController,
        ProbesController,
        ...MCP_CONTROLLERS,
        ...OPENAI_CONTROLLERS,
      ],
      providers: [
        {
          // The gateway's gauges, read on each scrape of METRICS (ObservabilityModule).
          provide: 'SCRAPE_HOOKS',
          inject: [METRICS, STAGE_QUEUE, DeliberationsRepository],
          useFactory: (metrics: Metrics, queue: StageQueue, deliberations: DeliberationsRepository) => {
            metrics.onScrape('conclave_queue_jobs', async () => {
              const states = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed'] as const;
              const counts = await queue.queue.getJobCounts(...states);
              for (const state of states)
                metrics.queueJobs.set({ queue: queue.queue.name, state }, counts[state] ?? 0);
            });
            metrics.onScrape('conclave_active_deliberations', async () => {
              const counts = await deliberations.activeCounts();
              for (const status of ['queued', 'running'] as const)
                metrics.activeDeliberations.set({ status }, counts[status]);
            });
            return metrics;
          },
        },
        AuthService,
        RateLimiter,
        PublicUrl,
        // Every route's query parameters checked like its body: unknown ones and lists refused.
        { provide: APP_INTERCEPTOR, useClass: QueryParamsInterceptor },
        ApiKeyGuard,
        StreamTickets,
        RequestValidator,
        DeliberationsService,
        CancelService,
        EventHub,
        LiveHub,
        StreamRegistry,
        BatchesService,
        BatchReportService,
        BatchHub,
        DeliberationsGateway,
        BudgetsService,
        DryRunService,
        LifecycleQueueView,
        ...MCP_PROVIDERS,
        ...OPENAI_PROVIDERS,
      ],
    };
  }
}

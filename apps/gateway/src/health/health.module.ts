import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { Metrics } from '@conclave/observability';
import { DeliberationsRepository } from '@conclave/persistence';
import { METRICS, STAGE_QUEUE } from '@conclave/platform';
import type { StageQueue } from '@conclave/redis';
import { HealthController } from './health.controller';
import { ProbesController } from './probes.controller';

/**
 * Health and metrics: GET /api/health (Terminus: PostgreSQL and Redis), and at the root for load
 * balancers, Kubernetes and Prometheus the probes (/health/live, /health/ready) and /metrics with
 * the gateway's gauges.
 */
@Module({
  imports: [TerminusModule],
  controllers: [HealthController, ProbesController],
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
  ],
})
export class HealthModule {}

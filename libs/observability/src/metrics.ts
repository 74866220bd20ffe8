import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const STAGE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const CALL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160];

/** Every Prometheus series Conclave exports; each process fills the ones it owns. */
export class Metrics {
  readonly registry = new Registry();
  private readonly scrapeHooks = new Map<string, () => Promise<void>>();

  readonly queueJobs = new Gauge({
    name: 'conclave_queue_jobs',
    collect: () => this.scrapeHooks.get('conclave_queue_jobs')?.(),
    help: 'Stage-queue jobs by state (every gateway reports the same queue: aggregate with max)',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
  });
  readonly stageDuration = new Histogram({
    name: 'conclave_stage_duration_seconds',
    help: 'Time one stage job took, by mode, stage and outcome',
    labelNames: ['mode', 'stage', 'outcome'] as const,
    buckets: STAGE_BUCKETS,
    registers: [this.registry],
  });
  readonly modelCallDuration = new Histogram({
    name: 'conclave_model_call_duration_seconds',
    help: 'Latency of one model call including its retries, by provider, model and outcome',
    labelNames: ['provider', 'model', 'outcome'] as const,
    buckets: CALL_BUCKETS,
    registers: [this.registry],
  });
  readonly modelCallErrors = new Counter({
    name: 'conclave_model_call_errors_total',
    help: 'Model calls that failed after their retries, by provider, model and error kind',
    labelNames: ['provider', 'model', 'kind'] as const,
    registers: [this.registry],
  });
  readonly modelCallRetries = new Counter({
    name: 'conclave_model_call_retries_total',
    help: 'Retried model-call attempts (429, 5xx, network), by provider and model',
    labelNames: ['provider', 'model'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'conclave_tokens_total',
    help: 'Tokens used, by provider, model and direction (prompt or completion)',
    labelNames: ['provider', 'model', 'direction'] as const,
    registers: [this.registry],
  });
  readonly cost = new Counter({
    name: 'conclave_cost_usd_total',
    help: 'Cost reported by providers, in US dollars',
    labelNames: ['provider', 'model'] as const,
    registers: [this.registry],
  });
  readonly activeDeliberations = new Gauge({
    name: 'conclave_active_deliberations',
    collect: () => this.scrapeHooks.get('conclave_active_deliberations')?.(),
    help: 'Deliberations queued or running, from PostgreSQL',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly connectedSockets = new Gauge({
    name: 'conclave_connected_sockets',
    collect: () => this.scrapeHooks.get('conclave_connected_sockets')?.(),
    help: 'Socket.IO clients connected to this gateway',
    registers: [this.registry],
  });

  constructor(process: 'gateway' | 'worker') {
    this.registry.setDefaultLabels({ process });
    collectDefaultMetrics({ register: this.registry, prefix: 'conclave_' });
  }

  /** Reads a gauge's value on each scrape, so figures from PostgreSQL or Redis cost nothing between scrapes. */
  onScrape(
    metric: 'conclave_queue_jobs' | 'conclave_active_deliberations' | 'conclave_connected_sockets',
    collect: () => Promise<void>,
  ): void {
    this.scrapeHooks.set(metric, async () => {
      try {
        await collect();
      } catch {
        // A backing service being down shows in /health/ready; the scrape still answers.
      }
    });
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

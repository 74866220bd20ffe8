import { createHash, timingSafeEqual } from 'node:crypto';
import { MODE_NAMES } from '@conclave/contracts';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const STAGE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const CALL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160];

/** The label value of everything outside a label's known set. */
export const OTHER_LABEL = 'other';
/** Most model ids that get a `model` label of their own; the configuration's first ones are kept. */
export const MAX_MODEL_LABELS = 64;
const MAX_MODEL_ID_CHARS = 200;
/** Provider keys (libs/llm PROVIDER_KEYS). */
export const PROVIDER_LABELS: readonly string[] = ['simulated', 'openrouter', 'openai-compatible'];
/** Modes (libs/contracts MODE_NAMES), and `unknown` for a stage that failed before its mode was read. */
export const MODE_LABELS: readonly string[] = [...MODE_NAMES, 'unknown'];
/** Every stage of every mode; Delphi's numbered rounds (round_3) count as one, `round_n`. */
export const STAGE_LABELS: readonly string[] = [
  // council
  'stage1',
  'stage2',
  'stage3',
  // jury
  'present',
  'deliberation',
  'verdict',
  // debate
  'round1',
  'revision',
  'vote',
  // delphi
  'classify',
  'round_n',
  'synthesis',
  // vote
  'answer',
  'tiebreak',
];

/** The gauges read on each scrape (Metrics.onScrape). */
type ScrapedGauge = 'conclave_queue_jobs' | 'conclave_active_deliberations' | 'conclave_connected_sockets';

export interface MetricsOptions {
  /**
   * Model ids that get a `model` label of their own: the ones the operator's configuration names
   * (at most MAX_MODEL_LABELS, first ones first). Every other id, being free text from requests,
   * is counted as `other`, so the series stay bounded and no user's model id is exported.
   */
  models?: Iterable<string>;
}

/**
 * Every Prometheus series Conclave exports; each process fills the ones it owns. Labels derived
 * from requests (model, provider, mode, stage) only take values from closed sets: use the *Label
 * methods for them.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly models: ReadonlySet<string>;
  private readonly providers: ReadonlySet<string> = new Set(PROVIDER_LABELS);
  private readonly modes: ReadonlySet<string> = new Set(MODE_LABELS);
  private readonly stages: ReadonlySet<string> = new Set(STAGE_LABELS);
  private readonly scrapeHooks = new Map<string, () => Promise<void>>();

  readonly queueJobs = this.scrapedGauge(
    'conclave_queue_jobs',
    'Stage-queue jobs by state (every gateway reports the same queue: aggregate with max)',
    ['queue', 'state'],
  );
  readonly stageDuration = this.histogram(
    'conclave_stage_duration_seconds',
    'Time one stage job took, by mode, stage and outcome',
    ['mode', 'stage', 'outcome'],
    STAGE_BUCKETS,
  );
  readonly modelCallDuration = this.histogram(
    'conclave_model_call_duration_seconds',
    'Latency of one model call including its retries, by provider, model and outcome',
    ['provider', 'model', 'outcome'],
    CALL_BUCKETS,
  );
  readonly modelCallErrors = this.counter(
    'conclave_model_call_errors_total',
    'Model calls that failed after their retries, by provider, model and error kind',
    ['provider', 'model', 'kind'],
  );
  readonly modelCallRetries = this.counter(
    'conclave_model_call_retries_total',
    'Retried model-call attempts (429, 5xx, network), by provider and model',
    ['provider', 'model'],
  );
  readonly tokens = this.counter(
    'conclave_tokens_total',
    'Tokens used, by provider, model and direction (prompt or completion)',
    ['provider', 'model', 'direction'],
  );
  readonly cost = this.counter('conclave_cost_usd_total', 'Cost reported by providers, in US dollars', [
    'provider',
    'model',
  ]);
  readonly activeDeliberations = this.scrapedGauge(
    'conclave_active_deliberations',
    'Deliberations queued or running, from PostgreSQL',
    ['status'],
  );
  readonly connectedSockets = this.scrapedGauge(
    'conclave_connected_sockets',
    'Socket.IO clients connected to this gateway',
  );
  /** Data lifecycle (workers): the fleet-wide `data-lifecycle` job, run by one worker at a time. */
  readonly retentionDeleted = this.counter(
    'conclave_retention_deleted_total',
    'Rows the data-lifecycle job deleted past RETENTION_DAYS, by kind (conversations, messages, stage_rows, model_calls, events, batches, event_partitions)',
    ['kind'],
  );
  readonly lifecycleRuns = this.counter(
    'conclave_lifecycle_runs_total',
    'Runs of the data-lifecycle job in this worker, by outcome (ok, incomplete, error)',
    ['outcome'],
  );
  readonly lifecycleRunDuration = this.histogram(
    'conclave_lifecycle_run_duration_seconds',
    'Time one run of the data-lifecycle job took in this worker',
    [],
    [0.01, 0.1, 1, 10, 60, 300, 900, 3600],
  );
  readonly lifecycleLastSuccess = this.gauge(
    'conclave_lifecycle_last_success_timestamp_seconds',
    'When this worker last finished a run of the data-lifecycle job (Unix time); alert on max() over workers',
  );
  readonly eventPartitionsCreated = this.counter(
    'conclave_event_partitions_created_total',
    'Weekly partitions of deliberation_events the data-lifecycle job created ahead of time',
  );

  readonly batchReports = this.counter(
    'conclave_batch_reports_total',
    "Batch reports and comparisons asked of this gateway, by kind and how each was answered (computed, cached: a finished batch's stored answer, refused: a full queue)",
    ['kind', 'outcome'],
  );

  constructor(process: 'gateway' | 'worker', options: MetricsOptions = {}) {
    const models = new Set<string>();
    for (const model of options.models ?? []) {
      if (models.size >= MAX_MODEL_LABELS) break;
      if (model.length > 0 && model.length <= MAX_MODEL_ID_CHARS && model !== OTHER_LABEL) models.add(model);
    }
    this.models = models;
    this.registry.setDefaultLabels({ process });
    collectDefaultMetrics({ register: this.registry, prefix: 'conclave_' });
  }

  /** The `model` label of a model id: itself when the configuration names it, else `other`. */
  modelLabel(model: string): string {
    return this.models.has(model) ? model : OTHER_LABEL;
  }

  /** The `provider` label: a known provider key, else `other`. */
  providerLabel(provider: string): string {
    return this.providers.has(provider) ? provider : OTHER_LABEL;
  }

  modeLabel(mode: string): string {
    return this.modes.has(mode) ? mode : OTHER_LABEL;
  }

  /** The `stage` label: the stage's kind (round_3 is round_n) when it is one of a mode's, else `other`. */
  stageLabel(stage: string): string {
    const kind = /^round_\d{1,4}$/.test(stage) ? 'round_n' : stage;
    return this.stages.has(kind) ? kind : OTHER_LABEL;
  }

  /** Reads a gauge's value on each scrape, so figures from PostgreSQL or Redis cost nothing between scrapes. */
  onScrape(metric: ScrapedGauge, collect: () => Promise<void>): void {
    this.scrapeHooks.set(metric, async () => {
      try {
        await collect();
      } catch {
        // A backing service being down shows in /health/ready; the scrape still answers.
      }
    });
  }

  /** A counter in this registry (`labelNames`: its labels, if any). */
  private counter<Label extends string = string>(
    name: string,
    help: string,
    labelNames: readonly Label[] = [],
  ) {
    return new Counter<Label>({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<Label extends string = string>(
    name: string,
    help: string,
    labelNames: readonly Label[],
    buckets: number[],
  ) {
    return new Histogram<Label>({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  private gauge<Label extends string = string>(
    name: string,
    help: string,
    labelNames: readonly Label[] = [],
  ) {
    return new Gauge<Label>({ name, help, labelNames, registers: [this.registry] });
  }

  /** A gauge read on each scrape, by the hook `onScrape` sets for its name. */
  private scrapedGauge<Label extends string = string>(
    name: ScrapedGauge,
    help: string,
    labelNames: readonly Label[] = [],
  ) {
    return new Gauge<Label>({
      name,
      help,
      labelNames,
      collect: () => this.scrapeHooks.get(name)?.(),
      registers: [this.registry],
    });
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** The `WWW-Authenticate` header of a /metrics request refused for want of the token. */
export const METRICS_CHALLENGE = 'Bearer realm="metrics"';

/**
 * Whether a /metrics request may be answered: always without a METRICS_TOKEN, else only with
 * `Authorization: Bearer <token>` (compared in constant time).
 */
export function metricsAuthorized(authorization: string | undefined, token: string | null): boolean {
  if (token === null) return true;
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(authorization ?? '');
  if (!match) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(match[1]), digest(token));
}

import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import type { Logger, Metrics } from '@conclave/observability';
import { CONFIG, LOGGER, METRICS, REDIS_PRODUCER } from '@conclave/platform';
import { UnstoredCalls } from '@conclave/persistence';
import type { RedisClient } from '@conclave/redis';
import { DataSource } from 'typeorm';
import { startWorkerHttp, type WorkerHttp } from './http';
import { StageProcessor } from './jobs/stage.processor';
import { Reconciler } from './reconciler';
import { Recovery } from './recovery';

/**
 * The worker's start and stop, in order. Start (once the processor's BullMQ worker exists and
 * consumes): its connection ready, the health/metrics port, the heartbeat, the reconciler. Stop
 * (before the modules close their connections): the reconciler, then the drain, then the
 * heartbeat (its lease covers the stages still draining), then the port.
 */
@Injectable()
export class WorkerLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private http: WorkerHttp | null = null;

  constructor(
    private readonly processor: StageProcessor,
    private readonly reconciler: Reconciler,
    private readonly recovery: Recovery,
    private readonly dataSource: DataSource,
    @Inject(REDIS_PRODUCER) private readonly producer: RedisClient,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly unstoredCalls: UnstoredCalls,
  ) {}

  /** Port of the worker's own HTTP server (health and metrics), once started. */
  get httpPort(): number {
    if (!this.http) throw new Error('the worker has not started');
    return this.http.port;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { config } = this;
    await this.processor.worker.waitUntilReady();
    this.http = await startWorkerHttp(
      config.worker.httpPort,
      this.dataSource,
      this.producer,
      this.metrics,
      config.metricsToken,
    );
    if (config.nodeEnv === 'production' && !config.metricsToken) {
      this.logger.warn(
        `METRICS_TOKEN is not set: /metrics on port ${this.http.port} answers whoever can reach it`,
      );
    }
    this.recovery.start();
    this.reconciler.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.reconciler.stop();
    await this.processor.drain(this.config.worker.shutdownTimeoutMs);
    await this.recovery.stop();
    // The usage of calls the drained stages could not store, before the pool closes.
    await this.unstoredCalls.close();
    await this.http?.close();
  }
}

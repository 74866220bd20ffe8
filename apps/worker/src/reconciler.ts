import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { StageRunner } from '@conclave/deliberation';
import type { Logger } from '@conclave/observability';
import { BatchDispatcher } from '@conclave/persistence';
import { CONFIG, LOGGER } from '@conclave/platform';

/**
 * PostgreSQL is the source of truth: work it holds that Redis lost (a restart without
 * persistence, a flushed instance) is found and enqueued again, at start and then periodically
 * (RECONCILE_INTERVAL_MS); deliberations idle past RECONCILE_IDLE_MS are rescheduled or closed.
 */
@Injectable()
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly runner: StageRunner,
    private readonly batches: BatchDispatcher,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** One pass now, then one every interval. */
  start(): void {
    void this.pass();
    this.timer = setInterval(() => void this.pass(), this.config.worker.reconcileIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private pass(): Promise<void> {
    return this.runner
      .reconcile(this.config.worker.reconcileIdleMs)
      .then((n) => {
        if (n > 0) this.logger.warn(`rescheduled or closed ${n} deliberation(s) that had stopped moving`);
      })
      .then(() => this.batches.reconcile())
      .catch((error: unknown) => this.logger.warn(`reconcile failed: ${String(error)}`));
  }
}

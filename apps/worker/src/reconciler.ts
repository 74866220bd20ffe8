import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { LiveCalls, Resumer, StageRunner } from '@conclave/deliberation';
import type { Logger } from '@conclave/observability';
import { BatchDispatcher, KEY_REVOKED_REASON, OpenWorkRepository, WorkStops } from '@conclave/persistence';
import { CONFIG, LOGGER } from '@conclave/platform';
import { internalErrorDuring, Recovery } from './recovery';

/**
 * PostgreSQL is the source of truth: work it holds that Redis lost (a restart without
 * persistence, a flushed instance) is found and enqueued again, at start and then periodically
 * (RECONCILE_INTERVAL_MS); deliberations idle past RECONCILE_IDLE_MS are rescheduled (with a
 * `resumed` event) or closed, unless a live worker's lease says it runs their stage. Work lost
 * with Redis is normally found much sooner, by the heartbeat (Recovery).
 * The same pass stops what a lost message left running: work of revoked API keys that a
 * revocation did not cancel (it failed half-way, or a request authenticated just before it stored
 * its deliberation just after), and calls running here for a deliberation that was cancelled
 * while this worker missed the control channel's `cancel`.
 */
@Injectable()
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly runner: StageRunner,
    private readonly resumer: Resumer,
    private readonly recovery: Recovery,
    private readonly batches: BatchDispatcher,
    private readonly stops: WorkStops,
    private readonly openWork: OpenWorkRepository,
    private readonly live: LiveCalls,
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
    return this.resumer
      .resumeLost({
        idleMs: this.config.worker.reconcileIdleMs,
        reason: 'stalled',
        // One announcement per stage and minute, however many workers find it.
        tag: String(Math.floor(Date.now() / 60_000)),
        running: this.recovery.runningStages(),
        failed: (messageId, stage) => this.runner.failPermanently(messageId, internalErrorDuring(stage)),
      })
      .then((n) => {
        if (n > 0) this.logger.warn(`rescheduled or closed ${n} deliberation(s) that had stopped moving`);
      })
      .then(() => this.batches.reconcile())
      .then(() => this.stopRevokedWork())
      .then(() => this.stopCancelledCalls())
      .catch((error: unknown) => this.logger.warn(`reconcile failed: ${String(error)}`));
  }

  private async stopRevokedWork(): Promise<void> {
    const done = await this.stops.cancelWorkOf({ revokedKeys: true }, KEY_REVOKED_REASON);
    const total = done.deliberations + done.batches + done.batchItems;
    if (total > 0) {
      this.logger.warn(
        `cancelled work of revoked API keys: ${done.deliberations} deliberation(s), ${done.batches} batch(es), ${done.batchItems} item(s)`,
      );
    }
  }

  private async stopCancelledCalls(): Promise<void> {
    for (const messageId of await this.openWork.cancelledAmong(this.live.messageIds())) {
      const stopped = this.runner.stopCalls(messageId, 'cancelled');
      if (stopped > 0) this.logger.warn(`aborted ${stopped} call(s) of ${messageId}, cancelled elsewhere`);
    }
  }
}

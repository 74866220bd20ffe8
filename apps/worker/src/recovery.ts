import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { LiveCalls, Resumer, StageRunner } from '@conclave/deliberation';
import type { Logger } from '@conclave/observability';
import { BatchDispatcher } from '@conclave/persistence';
import { CONFIG, LOGGER, REDIS_PRODUCER } from '@conclave/platform';
import { QueueWatch, type RedisClient } from '@conclave/redis';
import { ActiveStages } from './active-stages';

/** How soon after calls begin the heartbeat lists them (see Recovery.start). */
const SOON_MS = 50;

/** The error a deliberation is closed with when its stage's job failed for good. */
export const internalErrorDuring = (stage: string): string =>
  `The deliberation stopped because of an internal error during ${stage}. Please try again.`;

/**
 * The worker's heartbeat (WORKER_HEARTBEAT_MS): renews its lease on the stages it runs (and lists
 * its model calls in flight, see RunStageHandler) and checks
 * that Redis still holds the queue (QueueWatch). When Redis has lost it (restarted empty, flushed),
 * the worker whose heartbeat noticed first waits until every live worker has renewed its lease
 * (two heartbeats, plus the time a connection takes to come back), then queues again every
 * unfinished deliberation whose stage has no job and that no worker runs, each with a `resumed`
 * event; stages that ran on through the outage are left to finish (their calls are not made twice).
 */
@Injectable()
export class Recovery {
  private timer: NodeJS.Timeout | undefined;
  private beating = false;
  /** A beat asked for while one was on its way (calls began): it follows at once. */
  private again = false;
  private soonTimer: NodeJS.Timeout | undefined;
  private resuming = false;
  /** The last loss noticed (its new epoch, when) that no pass has looked after yet. */
  private latestLoss: { epoch: string; at: number; atStart: boolean } | null = null;
  private stopped = false;
  private beats = 0;
  private readonly onReady = () => void this.beat();

  constructor(
    private readonly watch: QueueWatch,
    private readonly resumer: Resumer,
    private readonly runner: StageRunner,
    private readonly batches: BatchDispatcher,
    private readonly active: ActiveStages,
    private readonly live: LiveCalls,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  private get heartbeatMs(): number {
    return this.config.worker.heartbeatMs;
  }

  /** A lease counts while younger than this (a few heartbeats; hosts' clocks within ~2 s). */
  private get leaseMaxAgeMs(): number {
    return 3 * this.heartbeatMs + 2000;
  }

  /** Before resuming: every live worker's lease is back (a reconnect can take ~2 s of backoff). */
  private get settleMs(): number {
    return 2 * this.heartbeatMs + 2500;
  }

  start(): void {
    void this.beat();
    this.timer = setInterval(() => void this.beat(), this.heartbeatMs);
    this.timer.unref();
    // Calls that begin are listed within SOON_MS, not at the next heartbeat: should this worker die
    // meanwhile, the worker taking its stage over counts them (see RunStageHandler).
    this.live.onTracked(() => this.soon());
    // Back after an outage: look at once rather than at the next heartbeat.
    this.redis.on('ready', this.onReady);
  }

  /** After the drain: the lease lasts as long as stages run here. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.soonTimer);
    this.live.onTracked(() => undefined);
    this.redis.off('ready', this.onReady);
    // Best effort and brief: with Redis away the lease simply ages out.
    await Promise.race([
      this.watch.leave().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, 1000).unref()),
    ]);
  }

  /**
   * Whether a live worker (this one included) runs a stage of the deliberation: the stage asked
   * about, or the one before it, whose job is about to enqueue this one. The leases are read once,
   * on the first question this worker cannot answer itself: a pass with nothing to repair needs no
   * Redis.
   */
  runningStages(): (messageId: string) => Promise<boolean> {
    let leased: Promise<Set<string>> | null = null;
    return async (messageId) => {
      if (this.active.hasMessage(messageId)) return true;
      leased ??= this.watch
        .running(this.leaseMaxAgeMs)
        .then((stages) => new Set([...stages].map((key) => key.slice(0, key.indexOf(':')))));
      return (await leased).has(messageId);
    };
  }

  /** A beat within SOON_MS (many calls that begin together share it). */
  private soon(): void {
    if (this.soonTimer || this.stopped) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      if (this.beating) this.again = true;
      else void this.beat();
    }, SOON_MS);
    this.soonTimer.unref();
  }

  private async beat(): Promise<void> {
    if (this.beating || this.stopped) return;
    this.beating = true;
    try {
      const { lost } = await this.watch.beat(this.active.keys(), this.live.inFlightCalls());
      const first = this.beats++ === 0;
      if (lost) this.resumeAfterLoss(lost, first);
    } catch {
      // Redis away: the connection reports it; the next heartbeat tries again.
    } finally {
      this.beating = false;
      if (this.again) {
        this.again = false;
        void this.beat();
      }
    }
  }

  /**
   * Resumes the work Redis lost once every live worker's lease is back (settleMs after the loss).
   * A loss noticed while an earlier one is being resumed is not dropped: the pass waits until it
   * has settled too, or, when it is already under way, another pass follows it. Either way the
   * last pass looks after the last loss, with every lease back, so neither a job lost the second
   * time stays lost nor is a stage whose lease was not back yet run twice.
   */
  private resumeAfterLoss(epoch: string, atStart: boolean): void {
    this.latestLoss = { epoch, at: Date.now(), atStart };
    if (this.resuming) {
      this.logger.warn(
        `Redis lost the stage queue again while its work was being resumed: resuming again ${this.settleMs} ms from now`,
      );
      return;
    }
    this.resuming = true;
    this.logger.warn(
      atStart
        ? 'the stage queue has no epoch yet (a new or emptied Redis): looking for work to resume'
        : `Redis lost the stage queue (restarted empty or flushed): resuming its work in ${this.settleMs} ms`,
    );
    void this.resumeLosses().finally(() => {
      this.resuming = false;
    });
  }

  /** One pass per settled loss, until no loss is left (see resumeAfterLoss). */
  private async resumeLosses(): Promise<void> {
    for (let loss = this.latestLoss; loss && !this.stopped; loss = this.latestLoss) {
      const wait = loss.at + this.settleMs - Date.now();
      if (wait > 0) {
        // Then looks again: a loss noticed meanwhile moves the time to resume.
        await new Promise((resolve) => setTimeout(resolve, wait).unref());
        continue;
      }
      this.latestLoss = null;
      try {
        const n = await this.resumer.resumeLost({
          idleMs: 0,
          reason: 'queue_lost',
          tag: loss.epoch,
          running: this.runningStages(),
          failed: (messageId, stage) => this.runner.failPermanently(messageId, internalErrorDuring(stage)),
        });
        await this.batches.reconcile();
        if (n > 0 || !loss.atStart) {
          this.logger.warn(
            `resumed ${n} deliberation(s) whose jobs Redis lost, ${Date.now() - loss.at} ms after noticing`,
          );
        }
      } catch (error) {
        this.logger.warn(`could not resume the lost work: ${String(error)}`);
      }
    }
  }
}

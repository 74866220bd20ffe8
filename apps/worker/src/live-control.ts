import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { controlChannel } from '@conclave/contracts';
import { LiveCalls, StageRunner, StopHearing } from '@conclave/deliberation';
import { connectionErrorLogger, type Logger } from '@conclave/observability';
import { OpenWorkRepository } from '@conclave/persistence';
import { CONFIG, LOGGER } from '@conclave/platform';
import { createRedis, parseControl, type RedisClient } from '@conclave/redis';

/**
 * How often a worker that cannot hear the control channel asks PostgreSQL which of the
 * deliberations it runs calls for were stopped (every stop is stored there first).
 */
export const STOP_CHECK_INTERVAL_MS = 1000;

/**
 * Hears what gateways tell every worker: a deliberation was cancelled (abort its calls running
 * here, within the time a PUBLISH takes), or someone watches one (send the answers so far, then
 * deltas).
 *
 * A `cancel` published while this subscriber is away (Redis down, a reconnect) is lost. So
 * StopHearing is told when the channel goes and comes back (the engine then trusts no state it
 * holds in memory from before the break: a stage loads the message and finds the stored stop),
 * and meanwhile PostgreSQL is asked every STOP_CHECK_INTERVAL_MS, and once more when the channel
 * is back, which of the deliberations with calls running here were cancelled: those are aborted.
 */
@Injectable()
export class LiveControl implements OnModuleInit, OnApplicationShutdown {
  private subscriber: RedisClient | null = null;
  private checking: NodeJS.Timeout | null = null;
  private checkRunning = false;
  private closing = false;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly runner: StageRunner,
    private readonly live: LiveCalls,
    private readonly hearing: StopHearing,
    private readonly openWork: OpenWorkRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    const channel = controlChannel(this.config.redisPrefix);
    const subscriber = createRedis(
      this.config,
      'subscriber',
      connectionErrorLogger((message) => this.log.warn(`redis control subscriber: ${message}`)),
    );
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, raw: string) => {
      const message = parseControl(raw);
      if (message?.type === 'cancel') this.runner.stopCalls(message.messageId, 'cancelled');
      else if (message?.type === 'watch') this.live.watch(message.messageId, message.replyTo);
    });
    subscriber.on('close', () => this.lost());
    // Connected again: ioredis subscribes again by itself; the reply to this SUBSCRIBE (sent after
    // it, on the same connection) says that cancels are heard from here on.
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        () => this.resumed(),
        (error: unknown) => this.log.warn(`redis control subscriber: could not subscribe: ${String(error)}`),
      );
    });
    await subscriber.subscribe(channel);
    this.resumed();
  }

  onApplicationShutdown(): void {
    this.closing = true;
    if (this.checking) clearInterval(this.checking);
    this.checking = null;
    this.subscriber?.disconnect();
  }

  private lost(): void {
    if (this.closing || !this.hearing.hearing) return;
    this.hearing.lost();
    this.log.warn('control channel lost: checking stops in PostgreSQL until it is back');
    if (!this.checking) {
      this.checking = setInterval(() => void this.checkStops(), STOP_CHECK_INTERVAL_MS);
      this.checking.unref();
    }
  }

  private resumed(): void {
    if (this.hearing.hearing) return;
    this.hearing.resumed();
    if (this.checking) {
      clearInterval(this.checking);
      this.checking = null;
      // Stops stored while the channel was away were never announced: one last look.
      void this.checkStops();
    }
  }

  /** Aborts the calls running here of deliberations stored as cancelled (one query, one at a time). */
  private async checkStops(): Promise<void> {
    const running = this.live.messageIds();
    if (this.checkRunning || running.length === 0) return;
    this.checkRunning = true;
    try {
      for (const messageId of await this.openWork.cancelledAmong(running)) {
        const stopped = this.runner.stopCalls(messageId, 'cancelled');
        if (stopped > 0) this.log.warn(`aborted ${stopped} call(s) of ${messageId}, cancelled elsewhere`);
      }
    } catch (error) {
      this.log.info(`could not check for stops: ${String(error)}`);
    } finally {
      this.checkRunning = false;
    }
  }
}

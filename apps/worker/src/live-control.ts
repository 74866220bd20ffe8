import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { listenDatabaseUrl, type ConclaveConfig } from '@conclave/config';
import { controlChannel } from '@conclave/contracts';
import { LiveCalls, StageRunner, StopHearing, type StopChannel } from '@conclave/deliberation';
import { connectionErrorLogger, type Logger } from '@conclave/observability';
import { OpenWorkRepository, StopListener } from '@conclave/persistence';
import { CONFIG, LOGGER } from '@conclave/platform';
import { createRedis, parseControl, type RedisClient } from '@conclave/redis';

/**
 * How often a worker that cannot hear stops asks PostgreSQL which of the deliberations it runs
 * calls for were stopped (every stop is stored there first).
 */
export const STOP_CHECK_INTERVAL_MS = 1000;

/**
 * Hears what tells every worker that a deliberation was stopped (abort its calls running here, and
 * drop its next stage if carried here), and what gateways ask of it: someone watches one (send the
 * answers so far, then deltas).
 *
 * Stops come on two channels (StopChannel): the Redis control channel (a `cancel` the stopping
 * process publishes after storing the stop; lost when it or this worker cannot reach Redis), and
 * PostgreSQL's `NOTIFY conclave_stops`, which the database sends in the transaction that stores
 * every stop, heard on a LISTEN connection of this worker's own (listenDatabaseUrl; none behind a
 * transaction pooler without DATABASE_LISTEN_URL/DATABASE_DIRECT_URL). StopHearing is told when each
 * goes and comes back; the one that decides (the database's when there is one) voids the engine's
 * trust in state it holds in memory from before a break: a stage loads the message and finds the
 * stored stop. While that channel (or Redis) is away, PostgreSQL is asked every
 * STOP_CHECK_INTERVAL_MS, and once more when it is back, which of the deliberations with calls
 * running here were cancelled: those are aborted.
 */
@Injectable()
export class LiveControl implements OnModuleInit, OnApplicationShutdown {
  private subscriber: RedisClient | null = null;
  private listener: StopListener | null = null;
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
    const listenUrl = listenDatabaseUrl(this.config);
    if (listenUrl) {
      this.listener = new StopListener(listenUrl, {
        stop: (messageId) => this.runner.stopCalls(messageId, 'cancelled'),
        up: () => this.resumed('database'),
        down: (reason) => this.lost('database', `stop notices from PostgreSQL lost (${reason})`),
      });
      // Before the control channel: the first attempt's outcome is known when the worker starts.
      await this.listener.start();
      if (!this.hearing.hears('database')) this.startChecking();
    } else {
      this.log.warn(
        'no direct PostgreSQL connection to LISTEN for stops (DATABASE_POOL_MODE=transaction without ' +
          'DATABASE_LISTEN_URL or DATABASE_DIRECT_URL): stops are heard on the Redis control channel only',
      );
    }
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
    subscriber.on('close', () => this.lost('control', 'control channel lost'));
    // Connected again: ioredis subscribes again by itself; the reply to this SUBSCRIBE (sent after
    // it, on the same connection) says that cancels are heard from here on.
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        () => this.resumed('control'),
        (error: unknown) => this.log.warn(`redis control subscriber: could not subscribe: ${String(error)}`),
      );
    });
    await subscriber.subscribe(channel);
    this.resumed('control');
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (this.checking) clearInterval(this.checking);
    this.checking = null;
    this.subscriber?.disconnect();
    await this.listener?.close();
  }

  /** Both channels that run here are up (the database's only when there is one). */
  private allUp(): boolean {
    return this.hearing.hears('control') && (!this.listener || this.hearing.hears('database'));
  }

  private lost(channel: StopChannel, what: string): void {
    if (this.closing || !this.hearing.hears(channel)) return;
    this.hearing.lost(channel);
    this.log.warn(`${what}: checking stops in PostgreSQL until it is back`);
    this.startChecking();
  }

  private startChecking(): void {
    if (this.checking) return;
    this.checking = setInterval(() => void this.checkStops(), STOP_CHECK_INTERVAL_MS);
    this.checking.unref();
  }

  private resumed(channel: StopChannel): void {
    if (this.hearing.hears(channel)) return;
    this.hearing.resumed(channel);
    // Stops stored while it was away were never announced on it: one look now.
    void this.checkStops();
    if (this.checking && this.allUp()) {
      clearInterval(this.checking);
      this.checking = null;
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

import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import type { RedisClient } from '@conclave/redis';
import { DeliberationsRepository } from '@conclave/persistence';
import { CONFIG } from '@conclave/platform';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { OrderedDelivery, type FirstReplay } from './ordered-delivery';
import { openSubscriber } from './subscriber';

type Listener = (event: DeliveredEvent) => void;

const RESYNC_INTERVAL_MS = 15_000;
/** Event `seq` is a PostgreSQL int: a larger `afterSeq` means "after everything" (and would fail the query). */
const MAX_SEQ = 2_147_483_647;

/**
 * Every gateway replica hears every event on one Redis channel and hands each to the local
 * subscribers of its message; replay and gap-filling come from Postgres.
 */
@Injectable()
export class EventHub implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('events');
  private readonly listeners = new Map<string, Set<Listener>>();
  /** Every open delivery, with the message it delivers. */
  private readonly deliveries = new Map<OrderedDelivery, string>();
  private subscriber: RedisClient | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly deliberations: DeliberationsService,
    private readonly repository: DeliberationsRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriber = openSubscriber(this.config, this.logger);
    this.subscriber.on('message', (_channel: string, raw: string) => this.dispatch(raw));
    // Publishes made while we were disconnected are gone: catch up from the store.
    this.subscriber.on('ready', () => void this.resyncAll());
    await this.subscriber.subscribe(eventsChannel(this.config.redisPrefix));
    this.resyncTimer = setInterval(() => void this.resyncAll(), RESYNC_INTERVAL_MS);
    this.resyncTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const delivery of [...this.deliveries.keys()]) delivery.close();
    this.subscriber?.disconnect();
  }

  /**
   * Catches up subscribers that missed a publish (lost, or sent while Redis was away). One query
   * reads the stored last seq of every watched message; only deliveries behind it fetch from the
   * store, so a re-sync costs one query however many subscriptions sit idle.
   */
  async resyncAll(): Promise<void> {
    const watched = new Map<string, OrderedDelivery[]>();
    for (const [delivery, messageId] of this.deliveries) {
      const list = watched.get(messageId);
      if (list) list.push(delivery);
      else watched.set(messageId, [delivery]);
    }
    if (watched.size === 0) return;
    let stored: Map<string, number>;
    try {
      stored = await this.repository.lastSeqs([...watched.keys()]);
    } catch (error) {
      // PostgreSQL away: the next re-sync (or the next live event) catches up.
      this.logger.warn(`re-sync skipped: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    for (const [id, lastSeq] of stored) {
      for (const delivery of watched.get(id) ?? []) {
        if (!delivery.isEnded && delivery.lastDeliveredSeq < lastSeq) delivery.resync();
      }
    }
  }

  private dispatch(raw: string): void {
    let events: DeliveredEvent[];
    try {
      events = JSON.parse(raw) as DeliveredEvent[];
    } catch {
      this.logger.warn('dropped an unreadable event message');
      return;
    }
    for (const event of events) {
      for (const listener of this.listeners.get(event.messageId) ?? []) listener(event);
    }
  }

  /**
   * Starts gap-free delivery of a message's events after `afterSeq`; returns the subscription.
   * `room`, asked after each event sent, holds the next one back while the subscriber is behind.
   * `first`: the first replay from another query (see OrderedDelivery.start), asked right after
   * the live listener is registered.
   */
  subscribe(
    messageId: string,
    afterSeq: number,
    send: (event: DeliveredEvent) => void,
    onEnd?: (reason: 'terminal' | 'closed' | 'failed') => void,
    room?: () => Promise<void> | null,
    first?: FirstReplay,
  ): OrderedDelivery {
    let listener: Listener = () => undefined;
    const delivery = new OrderedDelivery(
      Math.min(afterSeq, MAX_SEQ),
      // Events and status in one query: a new subscriber's replay is one round trip.
      (after) => this.deliberations.replayAfter(messageId, after),
      send,
      (reason) => {
        this.removeListener(messageId, listener);
        this.deliveries.delete(delivery);
        onEnd?.(reason);
      },
      room,
    );
    this.deliveries.set(delivery, messageId);
    listener = (event) => delivery.offer(event);
    const set = this.listeners.get(messageId) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(messageId, set);
    void delivery.start(first);
    return delivery;
  }

  private removeListener(messageId: string, listener: Listener): void {
    const set = this.listeners.get(messageId);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.listeners.delete(messageId);
  }
}

import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import { createRedis } from '@conclave/persistence';
import type { Redis } from 'ioredis';
import { CONFIG } from '../tokens';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { OrderedDelivery } from './ordered-delivery';

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
  private readonly deliveries = new Set<OrderedDelivery>();
  private subscriber: Redis | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly deliberations: DeliberationsService,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriber = createRedis(this.config.redisUrl, 'subscriber');
    this.subscriber.on('error', (error) => this.logger.warn(`redis subscriber: ${error.message}`));
    this.subscriber.on('message', (_channel: string, raw: string) => this.dispatch(raw));
    // Publishes made while we were disconnected are gone: catch up from the store.
    this.subscriber.on('ready', () => this.resyncAll());
    await this.subscriber.subscribe(eventsChannel(this.config.redisPrefix));
    this.resyncTimer = setInterval(() => this.resyncAll(), RESYNC_INTERVAL_MS);
    this.resyncTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const delivery of this.deliveries) delivery.close();
    this.subscriber?.disconnect();
  }

  private resyncAll(): void {
    for (const delivery of this.deliveries) delivery.resync();
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

  /** Starts gap-free delivery of a message's events after `afterSeq`; returns the subscription. */
  subscribe(
    messageId: string,
    afterSeq: number,
    send: (event: DeliveredEvent) => void,
    onEnd?: (reason: 'terminal' | 'closed' | 'failed') => void,
  ): OrderedDelivery {
    let listener: Listener = () => undefined;
    const delivery = new OrderedDelivery(
      Math.min(afterSeq, MAX_SEQ),
      (after) => this.deliberations.eventsAfter(messageId, after),
      send,
      (reason) => {
        this.removeListener(messageId, listener);
        this.deliveries.delete(delivery);
        onEnd?.(reason);
      },
      () => this.deliberations.isFinished(messageId),
    );
    this.deliveries.add(delivery);
    listener = (event) => delivery.offer(event);
    const set = this.listeners.get(messageId) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(messageId, set);
    void delivery.start();
    return delivery;
  }

  private removeListener(messageId: string, listener: Listener): void {
    const set = this.listeners.get(messageId);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.listeners.delete(messageId);
  }
}

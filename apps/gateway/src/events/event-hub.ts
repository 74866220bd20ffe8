import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import { createRedis } from '@conclave/persistence';
import type { Redis } from 'ioredis';
import { CONFIG } from '../tokens';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { OrderedDelivery } from './ordered-delivery';

type Listener = (event: DeliveredEvent) => void;

/**
 * Every gateway replica hears every event on one Redis channel and hands each to the local
 * subscribers of its message; replay and gap-filling come from Postgres.
 */
@Injectable()
export class EventHub implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('events');
  private readonly listeners = new Map<string, Set<Listener>>();
  private subscriber: Redis | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly deliberations: DeliberationsService,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriber = createRedis(this.config.redisUrl, 'subscriber');
    this.subscriber.on('error', (error) => this.logger.warn(`redis subscriber: ${error.message}`));
    this.subscriber.on('message', (_channel: string, raw: string) => this.dispatch(raw));
    await this.subscriber.subscribe(eventsChannel(this.config.redisPrefix));
  }

  async onModuleDestroy(): Promise<void> {
    this.subscriber?.disconnect();
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
      afterSeq,
      (after) => this.deliberations.eventsAfter(messageId, after),
      send,
      (reason) => {
        this.removeListener(messageId, listener);
        onEnd?.(reason);
      },
    );
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

import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import type { EventPublisher } from '@conclave/deliberation';
import type { RedisClient } from './connection';

const EVENTS_PER_MESSAGE = 500;

export class RedisEventPublisher implements EventPublisher {
  private readonly channel: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.channel = eventsChannel(prefix);
  }

  /** In order, in messages of at most 500 events: ending a 10 000-item batch is not one 2 MB message. */
  async publish(events: DeliveredEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += EVENTS_PER_MESSAGE) {
      await this.redis.publish(this.channel, JSON.stringify(events.slice(i, i + EVENTS_PER_MESSAGE)));
    }
  }
}

import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import type { EventPublisher } from '@conclave/deliberation';
import type { RedisClient } from './connection';

export class RedisEventPublisher implements EventPublisher {
  private readonly channel: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.channel = eventsChannel(prefix);
  }

  async publish(events: DeliveredEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.redis.publish(this.channel, JSON.stringify(events));
  }
}

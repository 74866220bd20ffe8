import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import type { EventPublisher } from '@conclave/deliberation';
import type { Redis } from 'ioredis';

export class RedisEventPublisher implements EventPublisher {
  private readonly channel: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.channel = eventsChannel(prefix);
  }

  async publish(events: DeliveredEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.redis.publish(this.channel, JSON.stringify(events));
  }
}

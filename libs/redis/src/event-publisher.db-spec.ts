import { randomBytes } from 'node:crypto';
import { eventsChannel, type DeliveredEvent } from '@conclave/contracts';
import IORedis from 'ioredis';
import { RedisEventPublisher } from './event-publisher';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('RedisEventPublisher (real Redis)', () => {
  const prefix = `t-events-${randomBytes(5).toString('hex')}`;
  const publisher = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
  const subscriber = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
  afterAll(() => {
    publisher.disconnect();
    subscriber.disconnect();
  });

  it('publishes many events in order, in messages of at most 500', async () => {
    const events: DeliveredEvent[] = Array.from({ length: 1_201 }, (_, i) => ({
      type: 'cancelled',
      messageId: `m${i}`,
      seq: 1,
      at: new Date(0).toISOString(),
      reason: 'The batch was cancelled.',
    }));
    const messages: DeliveredEvent[][] = [];
    await subscriber.subscribe(eventsChannel(prefix));
    const received = new Promise<void>((resolve) =>
      subscriber.on('message', (_channel: string, text: string) => {
        messages.push(JSON.parse(text) as DeliveredEvent[]);
        if (messages.flat().length >= events.length) resolve();
      }),
    );
    await new RedisEventPublisher(publisher, prefix).publish(events);
    await received;
    expect(messages.map((m) => m.length)).toEqual([500, 500, 201]);
    expect(messages.flat()).toEqual(events);
  });
});

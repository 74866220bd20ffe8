import { loadConfig } from '@conclave/config';
import type { Logger } from '@nestjs/common';
import { openSubscriber } from './subscriber';

describe('openSubscriber', () => {
  it("logs its connection's errors as the subscriber's", async () => {
    // Nothing listens on port 1: the connection fails at once.
    const config = loadConfig({ REDIS_URL: 'redis://127.0.0.1:1', AUTH_MODE: 'none' });
    const warned: string[] = [];
    const logger = { warn: (message: string) => warned.push(message) } as unknown as Logger;
    const subscriber = openSubscriber(config, logger);
    try {
      for (let i = 0; i < 100 && warned.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(warned[0]).toMatch(/^redis subscriber: /);
    } finally {
      subscriber.disconnect();
    }
  });
});

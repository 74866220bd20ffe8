import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import type { Redis } from 'ioredis';
import { CONFIG, REDIS_PRODUCER } from '../tokens';
import { ApiError } from './api-error';

export type RateBucket = 'requests' | 'deliberations';

const WINDOW_MS = 60_000;

/**
 * Per-user limits per minute, counted in Redis so they hold however many gateway replicas serve
 * the user. A limit of 0 switches a bucket off. When Redis cannot count, requests go through:
 * refusing every read because a counter is unavailable would turn a Redis blip into an outage.
 */
@Injectable()
export class RateLimiter {
  private readonly logger = new Logger('rate-limit');

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) private readonly redis: Redis,
  ) {}

  /** Counts one use; throws a 429 (with `retryAfterSeconds`) when the user is over the limit. */
  async take(userId: string, bucket: RateBucket): Promise<void> {
    const limit =
      bucket === 'requests' ? this.config.abuse.requestsPerMinute : this.config.abuse.deliberationsPerMinute;
    if (limit === 0) return;
    const window = Math.floor(Date.now() / WINDOW_MS);
    const key = `${this.config.redisPrefix}:ratelimit:${bucket}:${userId}:${window}`;
    let used: number;
    try {
      const [[, count]] = (await this.redis
        .multi()
        .incr(key)
        .pexpire(key, WINDOW_MS * 2)
        .exec()) as [[Error | null, number]];
      used = count;
    } catch (error) {
      this.logger.warn(
        `could not count ${bucket}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    if (used <= limit) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - Date.now()) / 1000));
    const what = bucket === 'requests' ? 'requests' : 'new deliberations';
    throw new RateLimited(
      `Too many ${what}: at most ${limit} a minute; try again in ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }
}

export class RateLimited extends ApiError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, message);
  }
}

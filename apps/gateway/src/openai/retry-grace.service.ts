import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG, REDIS_PRODUCER } from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import { ApiError } from '../common/api-error';
import { CancelService } from '../deliberations/cancel.service';
import { GraceDeadlines, GraceKeeper, graceTiming, type GraceRun, type RetryAttachment } from './retry-grace';

/**
 * The gateway's shell around GraceKeeper (retry-grace.ts): its timer, and the user's cancel through
 * CancelService. Off (every attach answers null) with V1_RETRY_GRACE_MS=0.
 */
@Injectable()
export class RetryGraceService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('openai');
  private readonly keeper: GraceKeeper | null;
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) redis: RedisClient,
    cancels: CancelService,
  ) {
    const timing = graceTiming(config.v1.retryGraceMs);
    this.keeper = timing
      ? new GraceKeeper({
          deadlines: new GraceDeadlines(redis, config.redisPrefix),
          timing,
          cancel: async (run, reason) => {
            try {
              await cancels.cancel(run.userId, run.messageId, reason ?? undefined);
            } catch (error) {
              // Already ended (409) or gone (404): nothing to cancel.
              if (!(error instanceof ApiError)) throw error;
            }
          },
          warn: (message) => this.logger.warn(message),
        })
      : null;
    this.tickMs = timing?.tickMs ?? 0;
  }

  onModuleInit(): void {
    if (!this.keeper) return;
    const keeper = this.keeper;
    this.timer = setInterval(() => void keeper.tick(), this.tickMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.keeper?.close();
  }

  /** A /v1 request with an Idempotency-Key follows `run`; null when there is no grace (V1_RETRY_GRACE_MS=0). */
  attach(run: GraceRun): RetryAttachment | null {
    return this.keeper?.attach(run) ?? null;
  }
}

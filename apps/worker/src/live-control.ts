import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { controlChannel } from '@conclave/contracts';
import { LiveCalls, StageRunner } from '@conclave/deliberation';
import { connectionErrorLogger, type Logger } from '@conclave/observability';
import { CONFIG, LOGGER } from '@conclave/platform';
import { createRedis, parseControl, type RedisClient } from '@conclave/redis';

/**
 * Hears what gateways tell every worker: a deliberation was cancelled (abort its calls running
 * here, within the time a PUBLISH takes), or someone watches one (send the answers so far, then
 * deltas).
 */
@Injectable()
export class LiveControl implements OnModuleInit, OnApplicationShutdown {
  private subscriber: RedisClient | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly runner: StageRunner,
    private readonly live: LiveCalls,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriber = createRedis(
      this.config,
      'subscriber',
      connectionErrorLogger((message) => this.log.warn(`redis control subscriber: ${message}`)),
    );
    this.subscriber.on('message', (_channel: string, raw: string) => {
      const message = parseControl(raw);
      if (message?.type === 'cancel') this.runner.stopCalls(message.messageId, 'cancelled');
      else if (message?.type === 'watch') this.live.watch(message.messageId, message.replyTo);
    });
    await this.subscriber.subscribe(controlChannel(this.config.redisPrefix));
  }

  onApplicationShutdown(): void {
    this.subscriber?.disconnect();
  }
}

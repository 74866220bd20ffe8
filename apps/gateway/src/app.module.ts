import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TerminusModule } from '@nestjs/terminus';
import type { ConclaveConfig } from '@conclave/config';
import { createRedis, dataSourceOptions, StageQueue } from '@conclave/persistence';
import type { Redis } from 'ioredis';
import { ApiKeyGuard } from './auth/auth.guard';
import { BatchHub } from './batches/batch-hub';
import { BatchesController } from './batches/batches.controller';
import { BatchesService } from './batches/batches.service';
import { AuthService } from './auth/auth.service';
import { ConversationsController } from './conversations/conversations.controller';
import { DeliberationsController } from './deliberations/deliberations.controller';
import { DeliberationsService } from './deliberations/deliberations.service';
import { RequestValidator } from './deliberations/request-validator';
import { DeliberationsGateway } from './events/deliberations.gateway';
import { EventHub } from './events/event-hub';
import { HealthController } from './health/health.controller';
import { ModesController } from './modes/modes.controller';
import { CONFIG, REDIS_PRODUCER, STAGE_QUEUE } from './tokens';

@Module({})
export class AppModule {
  static register(config: ConclaveConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions(config.databaseUrl),
          retryAttempts: 3,
          retryDelay: 1000,
        }),
        TerminusModule,
      ],
      controllers: [
        DeliberationsController,
        ConversationsController,
        BatchesController,
        ModesController,
        HealthController,
      ],
      providers: [
        { provide: CONFIG, useValue: config },
        {
          provide: REDIS_PRODUCER,
          useFactory: () => createRedis(config.redisUrl, 'producer'),
        },
        {
          provide: STAGE_QUEUE,
          inject: [REDIS_PRODUCER],
          useFactory: (redis: Redis) =>
            new StageQueue(redis, config.redisPrefix, { attempts: config.worker.attempts }),
        },
        {
          provide: 'SHUTDOWN',
          inject: [STAGE_QUEUE, REDIS_PRODUCER],
          useFactory: (queue: StageQueue, redis: Redis) => ({
            async onApplicationShutdown() {
              await queue.close().catch(() => undefined);
              redis.disconnect();
            },
          }),
        },
        AuthService,
        ApiKeyGuard,
        RequestValidator,
        DeliberationsService,
        EventHub,
        BatchesService,
        BatchHub,
        DeliberationsGateway,
      ],
    };
  }
}

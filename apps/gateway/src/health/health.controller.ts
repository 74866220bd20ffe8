import { Controller, Get, Inject } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { REDIS_PRODUCER } from '@conclave/platform';
import { redisAnswers, type RedisClient } from '@conclave/redis';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.database.pingCheck('postgres', { timeout: 2000 }),
      async () => {
        const indicator = this.indicators.check('redis');
        try {
          await redisAnswers(this.redis);
          return indicator.up();
        } catch {
          return indicator.down({ message: 'redis did not answer' });
        }
      },
    ]);
  }
}

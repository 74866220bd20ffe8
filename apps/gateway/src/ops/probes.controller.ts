import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { checkReadiness, type Metrics } from '@conclave/observability';
import type { Response } from 'express';
import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { METRICS, REDIS_PRODUCER } from '../tokens';

/** Served at the root (outside /api) for load balancers, Kubernetes and Prometheus. */
@ApiExcludeController()
@Controller()
export class ProbesController {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(REDIS_PRODUCER) private readonly redis: Redis,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  /** The process is up and serving; says nothing of PostgreSQL or Redis, so a restart is never the answer to their outage. */
  @Get('health/live')
  live() {
    return { status: 'ok' };
  }

  @Get('health/ready')
  async ready(@Res() res: Response) {
    const readiness = await checkReadiness(this.dataSource, this.redis);
    res
      .status(readiness.ready ? 200 : 503)
      .json({ status: readiness.ready ? 'ok' : 'error', ...readiness.checks });
  }

  @Get('metrics')
  @Header('cache-control', 'no-store')
  async scrape(@Res() res: Response) {
    const { contentType, body } = await this.metrics.exposition();
    res.type(contentType).send(body);
  }
}

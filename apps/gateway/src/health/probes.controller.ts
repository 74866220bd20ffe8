import {
  Controller,
  Get,
  Header,
  Inject,
  Logger,
  Req,
  Res,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { METRICS_CHALLENGE, metricsAuthorized, type Metrics } from '@conclave/observability';
import type { Request, Response } from 'express';
import { DataSource } from 'typeorm';
import { CONFIG, METRICS, REDIS_PRODUCER, checkReadiness } from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import { RETRY_AFTER_SECONDS } from '../common/api-error';

/** Served at the root (outside /api) for load balancers, Kubernetes and Prometheus. */
@ApiExcludeController()
@Controller()
export class ProbesController implements OnApplicationBootstrap {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.nodeEnv === 'production' && !this.config.metricsToken) {
      new Logger('Metrics').warn('METRICS_TOKEN is not set: /metrics answers whoever can reach this port');
    }
  }

  /** The process is up and serving; says nothing of PostgreSQL or Redis, so a restart is never the answer to their outage. */
  @Get('health/live')
  live() {
    return { status: 'ok' };
  }

  @Get('health/ready')
  async ready(@Res() res: Response) {
    const readiness = await checkReadiness(this.dataSource, this.redis);
    if (!readiness.ready) res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    res
      .status(readiness.ready ? 200 : 503)
      .json({ status: readiness.ready ? 'ok' : 'error', ...readiness.checks });
  }

  /** With METRICS_TOKEN set, only for `Authorization: Bearer <METRICS_TOKEN>` (Prometheus's scrape). */
  @Get('metrics')
  @Header('cache-control', 'no-store')
  async scrape(@Req() req: Request, @Res() res: Response) {
    if (!metricsAuthorized(req.headers.authorization, this.config.metricsToken)) {
      res.status(401).setHeader('WWW-Authenticate', METRICS_CHALLENGE).json({
        statusCode: 401,
        error: 'Unauthorized',
        message: 'metrics need Authorization: Bearer <METRICS_TOKEN>',
      });
      return;
    }
    const { contentType, body } = await this.metrics.exposition();
    res.type(contentType).send(body);
  }
}

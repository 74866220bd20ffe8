import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { METRICS_CHALLENGE, metricsAuthorized, type Metrics } from '@conclave/observability';
import { NOT_READY_RETRY_AFTER_SECONDS, checkReadiness } from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import type { DataSource } from 'typeorm';

export interface WorkerHttp {
  port: number;
  close(): Promise<void>;
}

/**
 * The worker's only HTTP surface: liveness, readiness (PostgreSQL and Redis) and Prometheus metrics,
 * the latter only for `Authorization: Bearer <metricsToken>` when one is set (METRICS_TOKEN). Not
 * ready answers 503 with Retry-After.
 */
export async function startWorkerHttp(
  port: number,
  dataSource: DataSource,
  redis: RedisClient,
  metrics: Metrics,
  metricsToken: string | null = null,
): Promise<WorkerHttp> {
  const server = createServer((req, res) => {
    const reply = (status: number, type: string, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': type, ...headers }).end(body);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return reply(405, 'application/json', '{"message":"only GET is served here"}');
    if (path === '/health/live') return reply(200, 'application/json', '{"status":"ok"}');
    if (path === '/health/ready') {
      // Not ready is a 503 with Retry-After, as every 503 of the gateway (its /health/ready included).
      void checkReadiness(dataSource, redis).then((r) =>
        reply(
          r.ready ? 200 : 503,
          'application/json',
          JSON.stringify({ status: r.ready ? 'ok' : 'error', ...r.checks }),
          r.ready ? {} : { 'retry-after': String(NOT_READY_RETRY_AFTER_SECONDS) },
        ),
      );
      return;
    }
    if (path === '/metrics') {
      if (!metricsAuthorized(req.headers.authorization, metricsToken)) {
        return reply(
          401,
          'application/json',
          '{"message":"metrics need Authorization: Bearer <METRICS_TOKEN>"}',
          { 'www-authenticate': METRICS_CHALLENGE },
        );
      }
      void metrics.exposition().then(
        (m) => reply(200, m.contentType, m.body),
        () => reply(500, 'text/plain', 'metrics could not be collected'),
      );
      return;
    }
    reply(
      404,
      'application/json',
      '{"message":"not found: the worker serves /health/live, /health/ready and /metrics"}',
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, process.env.HOST ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

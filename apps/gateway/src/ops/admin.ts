import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Inject, Injectable, type INestApplication, type OnApplicationShutdown } from '@nestjs/common';
import { ApiKeysRepository } from '@conclave/persistence';
import { type StageQueue } from '@conclave/redis';
import type { NextFunction, Request, Response } from 'express';
import { AuthService } from '../auth/auth.service';
import { RateLimited, RateLimiter } from '../common/rate-limiter';
import { LIFECYCLE_QUEUE } from '@conclave/contracts';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG, REDIS_PRODUCER, STAGE_QUEUE } from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import { Queue } from 'bullmq';

export const ADMIN_PATH = '/admin/queues';

/**
 * The retention job's queue, for the dashboard: its runs and failures show beside the stages'. On
 * the producer connection, closed with the application (the Queue puts listeners on it).
 */
@Injectable()
export class LifecycleQueueView implements OnApplicationShutdown {
  readonly queue: Queue;

  constructor(@Inject(REDIS_PRODUCER) producer: RedisClient, @Inject(CONFIG) config: ConclaveConfig) {
    this.queue = new Queue(LIFECYCLE_QUEUE, {
      connection: producer,
      prefix: config.queuePrefix,
      // The stage queue on this connection has checked Redis's version; checking again here would
      // send INFO while a Cluster may still be connecting, and without an offline queue that
      // failure would leave this Queue broken (every dashboard request a 500) for good.
      skipVersionCheck: true,
    });
    // Its connection's errors are the producer's, already logged there.
    this.queue.on('error', () => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close().catch(() => undefined);
  }
}
const COOKIE = 'conclave_admin';

function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/**
 * Bull Board for operators: admin keys only. A browser opens `/admin/queues?access_token=<key>`
 * once; the key then travels in an HttpOnly cookie scoped to /admin.
 */
export function mountAdmin(app: INestApplication): void {
  const auth = app.get(AuthService);
  const limiter = app.get(RateLimiter);
  const apiKeys = app.get(ApiKeysRepository);
  const queue = app.get<StageQueue>(STAGE_QUEUE);
  const lifecycle = app.get(LifecycleQueueView).queue;
  const board = new ExpressAdapter();
  board.setBasePath(ADMIN_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(queue.queue), new BullMQAdapter(lifecycle, { readOnlyMode: true })],
    serverAdapter: board,
  });

  const guard = (req: Request, res: Response, next: NextFunction) => {
    const fromQuery = typeof req.query.access_token === 'string' ? req.query.access_token : undefined;
    const token = AuthService.bearer(req.headers.authorization) ?? fromQuery ?? cookie(req, COOKIE);
    // A presented key costs a lookup: an address with too many wrong keys is refused before it.
    const address = token === undefined ? null : limiter.clientAddress(req);
    (address === null ? Promise.resolve() : limiter.assertAuthAllowed(address))
      .then(() => auth.userFor(token))
      .then(async (userId) => {
        if (!userId) {
          if (address !== null) await limiter.recordAuthFailure(address);
          res.status(401).json({
            statusCode: 401,
            error: 'Unauthorized',
            message:
              'Missing or invalid API key: send "Authorization: Bearer <key>" or open ?access_token=<key>',
          });
          return;
        }
        if (!(await apiKeys.isAdmin(userId))) {
          res.status(403).json({
            statusCode: 403,
            error: 'Forbidden',
            message: 'The queue dashboard is for admin keys only',
          });
          return;
        }
        if (fromQuery) {
          res.cookie(COOKIE, fromQuery, {
            httpOnly: true,
            sameSite: 'strict',
            path: '/admin',
            secure: req.secure,
          });
          res.redirect(req.baseUrl || ADMIN_PATH);
          return;
        }
        next();
      })
      .catch((error: unknown) => {
        if (error instanceof RateLimited) {
          res.setHeader('Retry-After', String(error.retryAfterSeconds));
          res.status(429).json(error.getResponse());
          return;
        }
        res.status(503).json({
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'Authentication is unavailable right now',
        });
      });
  };
  app.use(ADMIN_PATH, guard, board.getRouter());
}

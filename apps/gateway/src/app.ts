import type { INestApplication, LoggerService } from '@nestjs/common';
import { createLogger } from '@conclave/observability';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { AppModule } from './app.module';
import { hostGuard, OriginCheckedIoAdapter } from './common/origins';
import { useBodyParsers } from './common/body-parsers';
import { ErrorFilter } from './common/error.filter';
import { ADMIN_PATH, mountAdmin } from './ops/admin';
import { JsonNestLogger } from '@conclave/platform';

export async function createGateway(
  config: ConclaveConfig,
  options: { logger?: LoggerService | false } = {},
): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(config), {
    bodyParser: false,
    logger:
      options.logger === undefined
        ? new JsonNestLogger(createLogger(config.logLevel, 'gateway'))
        : options.logger,
  });
  // Single-user mode: only requests for a loopback or configured host name (DNS rebinding).
  app.use(hostGuard(config));
  app.use(helmet({ contentSecurityPolicy: false }));
  // JSON, and CSV / JSONL batch uploads: size limits, UTF-8 checked, errors as API errors.
  useBodyParsers(app, config);
  mountAdmin(app);
  serveWebClient(app, config.webDir);
  app.setGlobalPrefix('api', { exclude: ['health/live', 'health/ready', 'metrics'] });
  app.useGlobalFilters(new ErrorFilter(config.bodyLimit));
  // Cross-site callers only from the allow-list; the web client is served from the same origin.
  app.enableCors({ origin: config.corsOrigins.length > 0 ? config.corsOrigins : false });
  app.useWebSocketAdapter(new OriginCheckedIoAdapter(app, config));
  app.enableShutdownHooks();

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Conclave')
      .setDescription('Panels of language models deliberating in structured modes')
      .setVersion('0.1.0')
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
  return app;
}

/** Model output is rendered in this page: no script but our own, no external images or frames. */
const WEB_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self' ws: wss:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The browser client at `/`: its built files, and its page for every other non-API path. Every
 * response of the client carries WEB_CSP, whichever middleware answers: `/`, a client route,
 * `/index.html` or another file of the build (the static middleware), the "not built" page.
 */
function serveWebClient(app: NestExpressApplication, webDir: string): void {
  const dir = resolve(webDir);
  const index = join(dir, 'index.html');
  const built = existsSync(index);
  const notClient = ['/api', '/socket.io', '/health/', '/metrics', ADMIN_PATH];
  const isClient = (req: Request) => !notClient.some((prefix) => req.path.startsWith(prefix));
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (isClient(req)) res.setHeader('Content-Security-Policy', WEB_CSP);
    next();
  });
  if (built) app.useStaticAssets(dir, { index: false });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' || !isClient(req)) return next();
    if (built) return res.sendFile(index);
    res
      .status(503)
      .type('html')
      .send(
        '<p>The web client is not built yet: run <code>npm run build:web</code> (npm start does it for you).</p>',
      );
  });
}

import type { INestApplication, LoggerService } from '@nestjs/common';
import { createLogger } from '@conclave/observability';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { json, text, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import { AppModule } from './app.module';
import { OriginCheckedIoAdapter } from './common/origins';
import { bodyParserError, ErrorFilter } from './common/error.filter';
import { ADMIN_PATH, mountAdmin } from './ops/admin';
import { JsonNestLogger } from './ops/nest-logger';

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
  app.use(helmet({ contentSecurityPolicy: false }));
  // Batches carry up to 10 000 items, as JSON or as a CSV / JSONL upload.
  app.use(
    '/api/batches',
    json({ limit: config.batchBodyLimit }),
    text({
      type: ['text/csv', 'application/x-ndjson', 'application/jsonl', 'application/jsonlines'],
      limit: config.batchBodyLimit,
    }),
  );
  app.useBodyParser('json', { limit: config.bodyLimit });
  // Body-parser errors happen before Nest's filters see the request.
  app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const body = bodyParserError(error, config.bodyLimit);
    if (!body) return next(error);
    res.status(body.statusCode).json(body);
  });
  mountAdmin(app);
  serveWebClient(app, config.webDir);
  app.setGlobalPrefix('api', { exclude: ['health/live', 'health/ready', 'metrics'] });
  app.useGlobalFilters(new ErrorFilter(config.bodyLimit));
  // Cross-site callers only from the allow-list; the web client is served from the same origin.
  app.enableCors({ origin: config.corsOrigins.length > 0 ? config.corsOrigins : false });
  app.useWebSocketAdapter(new OriginCheckedIoAdapter(app, config.corsOrigins));
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

/** The browser client at `/`: its built files, and its page for every other non-API path. */
function serveWebClient(app: NestExpressApplication, webDir: string): void {
  const dir = resolve(webDir);
  const index = join(dir, 'index.html');
  const built = existsSync(index);
  if (built) app.useStaticAssets(dir, { index: false });
  app.use((req: Request, res: Response, next: NextFunction) => {
    const notClient = ['/api', '/socket.io', '/health/', '/metrics', ADMIN_PATH];
    if (req.method !== 'GET' || notClient.some((prefix) => req.path.startsWith(prefix))) return next();
    if (built) return res.setHeader('Content-Security-Policy', WEB_CSP).sendFile(index);
    res
      .status(503)
      .type('html')
      .send(
        '<p>The web client is not built yet: run <code>npm run build:web</code> (npm start does it for you).</p>',
      );
  });
}

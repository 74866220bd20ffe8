import type { INestApplication, LoggerService } from '@nestjs/common';
import { createLogger } from '@conclave/observability';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import helmet from 'helmet';
import type { NextFunction, Request, Response } from 'express';
import { AppModule } from './app.module';
import { hostGuard, OriginCheckedIoAdapter } from './common/origins';
import { useBodyParsers } from './common/body-parsers';
import { RateLimiter } from './common/rate-limiter';
import { ErrorFilter } from './common/error.filter';
import { mountAdmin } from './ops/admin';
import { serveWebClient } from './common/web-client';
import { JsonNestLogger } from '@conclave/platform';
import { THIRD_PARTY_PAGE_CSP } from './common/page-csp';

const DOCS_PATH = '/api/docs';

/**
 * The OpenAPI UI at /api/docs: its scripts (bundle, preset, init) are files of its own origin; its
 * page has an inline `<style>` and style attributes, so styles allow 'unsafe-inline', scripts never.
 */
export const DOCS_CSP = THIRD_PARTY_PAGE_CSP;

/** An API key in a URL ends up in logs and histories: `?access_token=` is refused on every route. */
const refuseKeysInUrls = (req: Request, res: Response, next: NextFunction): void => {
  if (!Object.prototype.hasOwnProperty.call(req.query, 'access_token')) return next();
  res.status(400).json({
    statusCode: 400,
    error: 'Bad Request',
    message:
      'API keys are not accepted in URLs (access_token); use the Authorization header, or POST /api/deliberations/:id/events/ticket for EventSource',
    fields: { access_token: 'not accepted: send "Authorization: Bearer <key>" instead' },
  });
};

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
  app.use(refuseKeysInUrls);
  serveWebClient(app, config.webDir);
  // MCP and the OpenAI-compatible endpoint live where their clients expect them, outside /api.
  app.setGlobalPrefix('api', {
    exclude: ['health/live', 'health/ready', 'metrics', 'mcp', 'v1/models', 'v1/chat/completions'],
  });
  app.useGlobalFilters(new ErrorFilter(config.bodyLimit));
  // Cross-site callers only from the allow-list; the web client is served from the same origin.
  app.enableCors({ origin: config.corsOrigins.length > 0 ? config.corsOrigins : false });
  app.useWebSocketAdapter(new OriginCheckedIoAdapter(app, config, app.get(RateLimiter)));
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
  // Swagger UI's page and its init script are files of their own: no inline script to allow.
  app.use(DOCS_PATH, (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    next();
  });
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
  return app;
}

import { Logger, type INestApplication, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { json, text, type NextFunction, type Request, type Response } from 'express';
import { AppModule } from './app.module';
import { bodyParserError, ErrorFilter } from './common/error.filter';

export async function createGateway(
  config: ConclaveConfig,
  options: { logger?: LoggerService | false } = {},
): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(config), {
    bodyParser: false,
    logger: options.logger === undefined ? new Logger() : options.logger,
  });
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
  app.setGlobalPrefix('api');
  app.useGlobalFilters(new ErrorFilter(config.bodyLimit));
  app.enableCors({ origin: true });
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

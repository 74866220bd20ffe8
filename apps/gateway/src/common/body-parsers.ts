import type { IncomingMessage, ServerResponse } from 'node:http';
import { isUtf8 } from 'node:buffer';
import type { ConclaveConfig } from '@conclave/config';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { json, text, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { bodyParserError, INVALID_UTF8 } from './error.filter';
import { fromApiErrorBody } from '../openai/errors';
import { isOpenAiPath, sendOpenAiError } from '../openai/openai-error.filter';

/** Batch uploads besides JSON. */
export const UPLOAD_TYPES = [
  'text/csv',
  'application/x-ndjson',
  'application/jsonl',
  'application/jsonlines',
];

/**
 * A body that says it is UTF-8 (or says nothing: UTF-8 is the default) must be: decoding would
 * silently turn each bad byte into U+FFFD and store text nobody sent.
 */
function verifyUtf8(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
  if (/^utf-?8$/i.test(encoding) && !isUtf8(body))
    throw Object.assign(new Error('request body is not valid UTF-8'), { status: 400, type: INVALID_UTF8 });
}

/** A parser whose errors carry the limit it applied, so a 413 names that one. */
function limited(limit: string, parser: RequestHandler): RequestHandler {
  return (req, res, next) =>
    parser(req, res, (error?: unknown) => {
      if (typeof error === 'object' && error !== null) Object.assign(error, { bodyLimit: limit });
      next(error);
    });
}

/**
 * Batches carry up to 10 000 items, as JSON or as a CSV / JSONL upload, under their own limit;
 * every other JSON body under the general one. Errors leave as the API's JSON errors.
 */
export function useBodyParsers(app: NestExpressApplication, config: ConclaveConfig): void {
  const batchLimit = config.batchBodyLimit;
  app.use(
    '/api/batches',
    limited(batchLimit, json({ limit: batchLimit, verify: verifyUtf8 })),
    limited(batchLimit, text({ type: UPLOAD_TYPES, limit: batchLimit, verify: verifyUtf8 })),
  );
  app.use(limited(config.bodyLimit, json({ limit: config.bodyLimit, verify: verifyUtf8 })));
  // Body-parser errors happen before Nest's filters see the request.
  app.use((error: unknown, req: Request, res: Response, next: NextFunction) => {
    const body = bodyParserError(error, config.bodyLimit);
    if (!body) return next(error);
    // The OpenAI-compatible surface answers in OpenAI's error shape.
    if (isOpenAiPath(req.path)) return sendOpenAiError(res, fromApiErrorBody(body));
    res.status(body.statusCode).json(body);
  });
}

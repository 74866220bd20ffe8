import { ArgumentsHost, Catch, HttpException, Logger, type ExceptionFilter } from '@nestjs/common';
import type { ApiErrorBody } from '@conclave/contracts';
import type { Request, Response } from 'express';
import { isStoreUnavailable } from '@conclave/persistence';
import { reasonPhrase, RETRY_AFTER_SECONDS, retryAfterOf } from './api-error';
import { fromApiErrorBody } from '../openai/errors';
import { isOpenAiPath, sendOpenAiError } from '../openai/openai-error.filter';

/** The `type` of the error a body parser's UTF-8 check raises. */
export const INVALID_UTF8 = 'entity.encoding.invalid';

/**
 * Turns an error from body parsing (malformed JSON, oversized body, bad charset, bytes that are
 * not UTF-8) into a 4xx. A 413 names the limit that applied: the parser's own, when it says
 * (the batch routes have their own), else `bodyLimit`.
 */
export function bodyParserError(error: unknown, bodyLimit: string): ApiErrorBody | null {
  const e = error as { type?: string; status?: number; expose?: boolean; bodyLimit?: unknown };
  if (typeof e?.status !== 'number') return null;
  // Errors body-parser raises itself carry a `type`; those from decoding (a body that claims a
  // compression it does not have) carry only an exposed 4xx status.
  if (typeof e.type !== 'string') {
    if (e.expose !== true || e.status < 400 || e.status >= 500) return null;
    return { statusCode: 400, error: 'Bad Request', message: 'Request body could not be decoded' };
  }
  if (e.type === 'entity.too.large') {
    const limit = typeof e.bodyLimit === 'string' ? e.bodyLimit : bodyLimit;
    return {
      statusCode: 413,
      error: 'Payload Too Large',
      message: `Request body is larger than the ${limit} limit`,
    };
  }
  const message =
    e.type === 'entity.parse.failed'
      ? 'Request body is not valid JSON'
      : e.type === INVALID_UTF8
        ? 'Request body is not valid UTF-8'
        : `Request body could not be read (${e.type})`;
  return { statusCode: 400, error: 'Bad Request', message };
}

/** Every HTTP error leaves in one JSON shape; unexpected errors are logged, never shown. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(private readonly bodyLimit: string) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const response = host.switchToHttp().getResponse<Response>();
    const request = host.switchToHttp().getRequest<Request>();
    if (response.headersSent) {
      response.end();
      return;
    }
    const body = this.toBody(exception, request);
    // Every 429 and 503 says when to come back: the error's own time, or the default.
    const retryAfter = retryAfterOf(exception, body.statusCode);
    // Under /v1 (an unknown path such as /v1/embeddings, too) errors keep OpenAI's shape.
    if (isOpenAiPath(request.path)) {
      sendOpenAiError(response, fromApiErrorBody(body, undefined, retryAfter));
      return;
    }
    if (retryAfter !== undefined) response.setHeader('Retry-After', String(retryAfter));
    response.status(body.statusCode).json(body);
  }

  private toBody(exception: unknown, request: Request): ApiErrorBody {
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const raw = exception.getResponse();
      if (typeof raw === 'object' && raw !== null && 'statusCode' in raw && 'error' in raw) {
        const body = raw as ApiErrorBody & { message: string | string[] };
        return { ...body, message: Array.isArray(body.message) ? body.message.join('; ') : body.message };
      }
      return { statusCode: status, error: reasonPhrase(status), message: exception.message };
    }
    const parsed = bodyParserError(exception, this.bodyLimit);
    if (parsed) return parsed;
    if (isStoreUnavailable(exception)) {
      this.logger.warn(
        `${request.method} ${request.path}: storage unavailable (${String((exception as Error)?.message)})`,
      );
      return {
        statusCode: 503,
        error: 'Service Unavailable',
        message: `Storage is unavailable right now; try again in ${RETRY_AFTER_SECONDS} seconds`,
      };
    }
    // The stack only at debug: error-level lines stay free of internals.
    this.logger.error(
      `${request.method} ${request.path}: ${exception instanceof Error ? exception.message : String(exception)}`,
    );
    if (exception instanceof Error && exception.stack) this.logger.debug(exception.stack);
    return { statusCode: 500, error: 'Internal Server Error', message: 'Something went wrong on our side' };
  }
}

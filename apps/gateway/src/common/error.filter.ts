import { ArgumentsHost, Catch, Logger, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { errorAnswerOf } from './error-answer';
import { fromApiErrorBody } from '../openai/errors';
import { isOpenAiPath, sendOpenAiError } from '../openai/openai-error.filter';

// The body parsers' errors are mapped with every other error, in error-answer.ts.
export { bodyParserError, INVALID_UTF8 } from './error-answer';

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
    const { body, retryAfterSeconds: retryAfter, kind } = errorAnswerOf(exception, this.bodyLimit);
    if (kind === 'storage') {
      this.logger.warn(
        `${request.method} ${request.path}: storage unavailable (${String((exception as Error)?.message)})`,
      );
    } else if (kind === 'unexpected') {
      // The stack only at debug: error-level lines stay free of internals.
      this.logger.error(
        `${request.method} ${request.path}: ${exception instanceof Error ? exception.message : String(exception)}`,
      );
      if (exception instanceof Error && exception.stack) this.logger.debug(exception.stack);
    }
    // Under /v1 (an unknown path such as /v1/embeddings, too) errors keep OpenAI's shape.
    if (isOpenAiPath(request.path)) {
      sendOpenAiError(response, fromApiErrorBody(body, undefined, retryAfter));
      return;
    }
    // Every 429 and 503 says when to come back: the error's own time, or the default.
    if (retryAfter !== undefined) response.setHeader('Retry-After', String(retryAfter));
    response.status(body.statusCode).json(body);
  }
}

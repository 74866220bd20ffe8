import { ArgumentsHost, Catch, HttpException, Logger, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { retryAfterOf } from '../common/api-error';
import { errorAnswerOf } from '../common/error-answer';
import { errorObject, fromApiErrorBody, OpenAiError, worthRetrying, type OpenAiErrorSpec } from './errors';

/** Any error of a /v1 route as an OpenAI error: its status, `type`, `code` and `param`. */
export function openAiErrorOf(
  exception: unknown,
  fieldParam?: (field: string) => string | null,
): OpenAiErrorSpec | null {
  if (exception instanceof OpenAiError) return exception.spec;
  // The product's one mapping (errorAnswerOf): the same status, message and retry hint as
  // /api and Socket.IO give, in OpenAI's shape.
  const { body, retryAfterSeconds, kind } = errorAnswerOf(exception);
  if (kind === 'unexpected') return null;
  return fromApiErrorBody(
    body,
    exception instanceof HttpException ? fieldParam : undefined,
    retryAfterSeconds,
  );
}

/** The routes of the OpenAI-compatible surface (their errors are OpenAI's shape even before Nest sees them). */
export const isOpenAiPath = (path: string): boolean => path === '/v1' || path.startsWith('/v1/');

/** Sends an OpenAI error: Retry-After for 429 and 503, and `x-should-retry: false` when retrying cannot help. */
export function sendOpenAiError(response: Response, spec: OpenAiErrorSpec): void {
  const retryAfter = spec.retryAfterSeconds ?? retryAfterOf(null, spec.status);
  if (retryAfter !== undefined) response.setHeader('Retry-After', String(retryAfter));
  // The openai SDKs retry 409 and 5xx by default; a deliberation that failed would run (and cost) again.
  response.setHeader('x-should-retry', worthRetrying(spec.status) ? 'true' : 'false');
  response
    .status(spec.status)
    .json({ error: errorObject(spec), ...(spec.conclave ? { conclave: spec.conclave } : {}) });
}

/** Every error of the /v1 controller in OpenAI's shape; unexpected ones are logged, never shown. */
@Catch()
export class OpenAiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('openai');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const response = host.switchToHttp().getResponse<Response>();
    if (response.headersSent) {
      response.end();
      return;
    }
    let spec = openAiErrorOf(exception);
    if (!spec) {
      this.logger.error(
        exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
      );
      spec = {
        status: 500,
        message: 'The server had an error while processing your request.',
        type: 'server_error',
        param: null,
        code: null,
      };
    }
    sendOpenAiError(response, spec);
  }
}

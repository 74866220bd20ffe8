import { HttpException, HttpStatus } from '@nestjs/common';
import type { ApiErrorBody } from '@conclave/contracts';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export const reasonPhrase = (status: number): string => REASONS[status] ?? 'Error';

/** Retry-After of a 429 or 503 that knows no better time (a freed stream place, a store back up). */
export const RETRY_AFTER_SECONDS = 5;

/**
 * An HTTP error in the product's shape: `{ statusCode, error, message, fields? }`. A 429 or 503
 * may say when to come back (`retryAfterSeconds`); the error filters send it as Retry-After, and
 * RETRY_AFTER_SECONDS for one that does not say.
 */
export class ApiError extends HttpException {
  readonly retryAfterSeconds?: number;

  constructor(
    status: number,
    message: string,
    fields?: Record<string, string>,
    options: { retryAfterSeconds?: number } = {},
  ) {
    const body: ApiErrorBody = { statusCode: status, error: reasonPhrase(status), message };
    if (fields && Object.keys(fields).length > 0) body.fields = fields;
    super(body, status);
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }

  static invalid(fields: Record<string, string>): ApiError {
    const names = Object.keys(fields);
    return new ApiError(
      HttpStatus.BAD_REQUEST,
      `Invalid request: ${names.map((n) => `${n} (${fields[n]})`).join('; ')}`,
      fields,
    );
  }

  static notFound(what: string): ApiError {
    return new ApiError(HttpStatus.NOT_FOUND, `${what} not found`);
  }
}

/**
 * The refusal of new work while the job queue (Redis) cannot take it: a single deliberation and a
 * batch alike, nothing of it kept (503, with Retry-After).
 */
export const queueUnavailable = (): ApiError =>
  new ApiError(503, 'The job queue is unavailable right now; nothing was started. Please retry.');

/** Whether a status tells the client to come back later: every such answer carries Retry-After. */
export const asksToRetry = (status: number): boolean => status === 429 || status === 503;

/**
 * The Retry-After, in whole seconds, of an error answered with `status`: the error's own for a 429
 * or 503 that names one, else RETRY_AFTER_SECONDS; none for any other status.
 */
export function retryAfterOf(exception: unknown, status: number): number | undefined {
  if (!asksToRetry(status)) return undefined;
  const own = exception instanceof ApiError ? exception.retryAfterSeconds : undefined;
  return own ?? RETRY_AFTER_SECONDS;
}

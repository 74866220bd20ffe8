import { HttpException } from '@nestjs/common';
import type { ApiErrorBody } from '@conclave/contracts';
import { isStoreUnavailable } from '@conclave/persistence';
import { reasonPhrase, RETRY_AFTER_SECONDS, retryAfterOf } from './api-error';

/** The `type` of the error a body parser's UTF-8 check raises. */
export const INVALID_UTF8 = 'entity.encoding.invalid';

/** What every transport says while PostgreSQL cannot be reached. */
export const STORAGE_UNAVAILABLE = `Storage is unavailable right now; try again in ${RETRY_AFTER_SECONDS} seconds`;

/** What every transport says about an error it does not expect (the error itself is logged, never shown). */
export const UNEXPECTED_ERROR = 'Something went wrong on our side';

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

/**
 * What an error answers, whichever transport carries it: HTTP sends `body` with `Retry-After`
 * (`retryAfterSeconds`), a Socket.IO ack `{ error: { statusCode, message, fields?, retryAfterSeconds? } }`,
 * /v1 the same status and message in OpenAI's shape.
 */
export interface ErrorAnswer {
  body: ApiErrorBody & { message: string };
  /** For every 429 and 503: the error's own time, else RETRY_AFTER_SECONDS. */
  retryAfterSeconds?: number;
  /**
   * `refusal`: an answer the product gives on purpose; `storage`: PostgreSQL or Redis could not be
   * reached (worth a warning); `unexpected`: a bug, to log as an error and never show.
   */
  kind: 'refusal' | 'storage' | 'unexpected';
}

/** The one rule from an error to its status, message and retry hint, for HTTP, /v1 and Socket.IO alike. */
export function errorAnswerOf(exception: unknown, bodyLimit = ''): ErrorAnswer {
  let body: ApiErrorBody & { message: string };
  let kind: ErrorAnswer['kind'] = 'refusal';
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const raw = exception.getResponse();
    if (typeof raw === 'object' && raw !== null && 'statusCode' in raw && 'error' in raw) {
      const given = raw as ApiErrorBody & { message: string | string[] };
      body = {
        ...given,
        message: Array.isArray(given.message) ? given.message.join('; ') : String(given.message),
      };
    } else {
      body = { statusCode: status, error: reasonPhrase(status), message: exception.message };
    }
  } else {
    const parsed = bodyParserError(exception, bodyLimit);
    if (parsed) body = parsed;
    else if (isStoreUnavailable(exception)) {
      kind = 'storage';
      body = { statusCode: 503, error: reasonPhrase(503), message: STORAGE_UNAVAILABLE };
    } else {
      kind = 'unexpected';
      body = { statusCode: 500, error: reasonPhrase(500), message: UNEXPECTED_ERROR };
    }
  }
  const retryAfterSeconds = retryAfterOf(exception, body.statusCode);
  return retryAfterSeconds === undefined ? { body, kind } : { body, kind, retryAfterSeconds };
}

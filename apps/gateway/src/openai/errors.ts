import { HttpException } from '@nestjs/common';
import type { ApiErrorBody } from '@conclave/contracts';

/** OpenAI's error object: `{ "error": { message, type, param, code } }`. */
export interface OpenAiErrorObject {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** An error of the /v1 surface: its HTTP status, its OpenAI error object, and its headers. */
export interface OpenAiErrorSpec extends OpenAiErrorObject {
  status: number;
  /** Seconds, for a 429 or 503: sent as Retry-After. */
  retryAfterSeconds?: number;
  /** A deliberation that ended without its final text: the `conclave` field, sent beside `error`. */
  conclave?: object;
}

/** The error `type` OpenAI uses for each status. */
export function errorTypeFor(status: number): string {
  if (status === 401) return 'invalid_request_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** A default `code` for a status, when nothing more precise is known. */
export function errorCodeFor(status: number): string | null {
  switch (status) {
    case 401:
      return 'invalid_api_key';
    case 402:
      return 'insufficient_quota';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 413:
      return 'request_too_large';
    case 422:
      return 'idempotency_key_reused';
    case 429:
      return 'rate_limit_exceeded';
    case 503:
      return 'service_unavailable';
    default:
      return null;
  }
}

export function invalidRequest(
  message: string,
  param: string | null,
  code: string | null = null,
): OpenAiErrorSpec {
  return { status: 400, message, type: 'invalid_request_error', param, code };
}

/** Thrown by the /v1 surface; OpenAiErrorFilter sends it as it is. */
export class OpenAiError extends HttpException {
  constructor(readonly spec: OpenAiErrorSpec) {
    super({ error: errorObject(spec) }, spec.status);
  }
}

export const errorObject = (spec: OpenAiErrorSpec): OpenAiErrorObject => ({
  message: spec.message,
  type: spec.type,
  param: spec.param,
  code: spec.code,
});

/**
 * The product's error body (ApiError, the body parsers') in OpenAI's shape. `fieldParam` turns a
 * request field the product names (`question`, `preset`, ...) into the /v1 parameter it came from;
 * the first field named becomes `param`.
 */
export function fromApiErrorBody(
  body: ApiErrorBody,
  fieldParam: (field: string) => string | null = () => null,
  retryAfterSeconds?: number,
): OpenAiErrorSpec {
  const status = body.statusCode;
  const fields = Object.entries(body.fields ?? {});
  let message = body.message;
  let param: string | null = null;
  let code = errorCodeFor(status);
  if (status === 400 && fields.length > 0) {
    const named = fields.map(([field, why]) => ({ field, param: fieldParam(field), why }));
    param = named.find((n) => n.param !== null)?.param ?? null;
    message = `Invalid request: ${named.map((n) => `${n.param ?? n.field} (${n.why})`).join('; ')}`;
    if (named.some((n) => n.field === 'preset' || n.field === 'mode')) code = 'model_not_found';
  } else if (status === 400) {
    if (/not valid JSON/i.test(message)) code = 'invalid_json';
  }
  return {
    status,
    message,
    type: errorTypeFor(status),
    param,
    code,
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  };
}

/** Whether a client should send the same request again: only when nothing was started (429, 503). */
export const worthRetrying = (status: number): boolean => status === 429 || status === 503;

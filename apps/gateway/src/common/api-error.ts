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

/** An HTTP error in the product's shape: `{ statusCode, error, message, fields? }`. */
export class ApiError extends HttpException {
  constructor(status: number, message: string, fields?: Record<string, string>) {
    const body: ApiErrorBody = { statusCode: status, error: reasonPhrase(status), message };
    if (fields && Object.keys(fields).length > 0) body.fields = fields;
    super(body, status);
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

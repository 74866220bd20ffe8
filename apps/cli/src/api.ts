import type { ApiErrorBody } from '@conclave/contracts';
import type { Target } from './args';
import { CliError, keyRefused, unreachable } from './errors';

export interface SendOptions {
  body?: string;
  contentType?: string;
  query?: Record<string, string | undefined>;
}

function isApiError(value: unknown): value is ApiErrorBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ApiErrorBody).message === 'string' &&
    typeof (value as ApiErrorBody).statusCode === 'number'
  );
}

async function failureOf(response: Response, target: Target): Promise<CliError> {
  if (response.status === 401) return keyRefused(target.key);
  const text = await response.text().catch(() => '');
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not the API's JSON (a proxy's error page, say)
  }
  if (isApiError(body)) return new CliError(body.message, body.fields, response.status);
  return new CliError(`HTTP ${response.status} ${response.statusText}`.trim(), undefined, response.status);
}

/** The HTTP API under `<url>/api`, with the key as a bearer token and errors as `CliError`s. */
export class ApiClient {
  constructor(private readonly target: Target) {}

  async send(method: string, path: string, options: SendOptions = {}): Promise<Response> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) query.set(name, value);
    const search = query.size > 0 ? `?${query.toString()}` : '';
    const headers: Record<string, string> = {};
    if (this.target.key) headers.authorization = `Bearer ${this.target.key}`;
    if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    let response: Response;
    try {
      response = await fetch(`${this.target.url}/api${path}${search}`, {
        method,
        headers,
        body: options.body,
      });
    } catch {
      throw unreachable(this.target.url);
    }
    if (!response.ok) throw await failureOf(response, this.target);
    return response;
  }

  async json<T>(method: string, path: string, options: SendOptions = {}): Promise<T> {
    const response = await this.send(method, path, options);
    return (await response.json()) as T;
  }
}

import { Logger, type ArgumentsHost } from '@nestjs/common';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ApiError, RETRY_AFTER_SECONDS, retryAfterOf } from './api-error';
import { errorAnswerOf } from './error-answer';
import { ErrorFilter } from './error.filter';
import { RateLimited } from './rate-limiter';
import { OpenAiError } from '../openai/errors';
import { OpenAiErrorFilter, sendOpenAiError } from '../openai/openai-error.filter';

const GATEWAY = path.resolve(__dirname, '..');

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* sources(full);
    else if (name.endsWith('.ts') && !name.endsWith('.spec.ts')) yield full;
  }
}

/**
 * A 429 or 503 written as a literal status: `res.status(503)`, `statusCode: 429`, `status: 503`,
 * `.status(ready ? 200 : 503)`, `writeHead(503`. (A thrown `ApiError(429 | 503, …)` is answered by
 * the error filters, which add Retry-After to every such status: tested below.)
 */
const LITERAL = /\b(?:status(?:Code)?\s*[:(]|writeHead\()\s*(?:[\w.]+\s*\?\s*\d{3}\s*:\s*)?(429|503)\b/g;

/**
 * Every place of the gateway that writes a 429 or 503 itself, and how that answer gets its
 * Retry-After. A new one fails this test until it is listed here, with its Retry-After.
 */
const WRITERS: Record<
  string,
  { count: number; how: 'sets the header' | 'through a filter' | 'socket' | 'json-rpc error data' }
> = {
  // The dashboard's guard answers itself (Express middleware, before Nest's filters).
  'ops/admin.ts': { count: 3, how: 'sets the header' },
  // /health/ready's 503.
  'health/probes.controller.ts': { count: 1, how: 'sets the header' },
  // The "web client not built" page.
  'common/web-client.ts': { count: 1, how: 'sets the header' },
  // The 503 for storage outages, in the one mapping every transport renders (errorAnswerOf gives it
  // RETRY_AFTER_SECONDS: ErrorFilter, OpenAiErrorFilter and the Socket.IO acks send it).
  'common/error-answer.ts': { count: 1, how: 'through a filter' },
  // LOST: sent by sendOpenAiError, which defaults Retry-After for 429 and 503.
  'openai/chat-run.ts': { count: 1, how: 'through a filter' },
  // Not an HTTP answer: MCP resources/read's JSON-RPC error while storage is away, whose data carries
  // retryAfterSeconds (RETRY_AFTER_SECONDS) beside the 503 (test/error-vocabulary.e2e-spec.ts).
  'mcp/mcp.service.ts': { count: 1, how: 'json-rpc error data' },
};

describe('every 429 and 503 of the gateway carries Retry-After', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('lists every place that writes a 429 or 503 itself, and each of those sets Retry-After', () => {
    const found: Record<string, number> = {};
    for (const file of sources(GATEWAY)) {
      const text = readFileSync(file, 'utf8');
      const count = [...text.matchAll(LITERAL)].length;
      if (count > 0) found[path.relative(GATEWAY, file).split(path.sep).join('/')] = count;
    }
    expect(found).toEqual(Object.fromEntries(Object.entries(WRITERS).map(([file, w]) => [file, w.count])));
    for (const [file, writer] of Object.entries(WRITERS)) {
      if (writer.how !== 'sets the header') continue;
      expect([file, readFileSync(path.join(GATEWAY, file), 'utf8')]).toEqual([
        file,
        expect.stringContaining("'Retry-After'"),
      ]);
    }
  });

  /** What a filter sent: status, headers, body. */
  function capture(pathname: string) {
    const headers: Record<string, string> = {};
    const sent: { status?: number; body?: unknown } = {};
    const response = {
      headersSent: false,
      setHeader(name: string, value: string) {
        headers[name.toLowerCase()] = value;
        return response;
      },
      status(code: number) {
        sent.status = code;
        return response;
      },
      json(body: unknown) {
        sent.body = body;
        return response;
      },
      end() {
        return response;
      },
    };
    const request = { method: 'GET', path: pathname };
    const host = {
      getType: () => 'http',
      switchToHttp: () => ({ getResponse: () => response, getRequest: () => request }),
    } as unknown as ArgumentsHost;
    return { host, headers, sent, response };
  }

  const storeDown = Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
  const cases: [string, unknown, number, string | undefined][] = [
    ['a limit that names its wait', new RateLimited('Too many requests', 7), 429, '7'],
    [
      'a cap that does not (streams, active batches)',
      new ApiError(429, 'Too many open event streams'),
      429,
      '5',
    ],
    ['a 503 (job queue, computation slots, rate limiting down)', new ApiError(503, 'unavailable'), 503, '5'],
    ['storage unavailable', storeDown, 503, '5'],
    ['any other status', new ApiError(409, 'busy'), 409, undefined],
  ];

  it.each(cases)('ErrorFilter: %s', (_what, error, status, retryAfter) => {
    for (const pathname of ['/api/conversations', '/v1/chat/completions']) {
      const { host, headers, sent } = capture(pathname);
      new ErrorFilter('1mb').catch(error, host);
      expect([pathname, sent.status, headers['retry-after']]).toEqual([pathname, status, retryAfter]);
    }
  });

  it.each(cases)('errorAnswerOf, which Socket.IO acks render too: %s', (_what, error, status, retryAfter) => {
    const answer = errorAnswerOf(error);
    expect([answer.body.statusCode, answer.retryAfterSeconds]).toEqual([
      status,
      retryAfter === undefined ? undefined : Number(retryAfter),
    ]);
  });

  it.each(cases)('OpenAiErrorFilter: %s', (_what, error, status, retryAfter) => {
    const { host, headers, sent } = capture('/v1/chat/completions');
    new OpenAiErrorFilter().catch(error, host);
    expect([sent.status, headers['retry-after']]).toEqual([status, retryAfter]);
  });

  it('an OpenAI error of 429 or 503 without its own time gets the default', () => {
    for (const status of [429, 503]) {
      const { headers, response } = capture('/v1/chat/completions');
      const spec = { status, message: 'later', type: 'server_error', param: null, code: null };
      sendOpenAiError(response as never, spec);
      expect(headers['retry-after']).toBe(String(RETRY_AFTER_SECONDS));
      const { host, headers: thrown } = capture('/v1/chat/completions');
      new OpenAiErrorFilter().catch(new OpenAiError({ ...spec, retryAfterSeconds: 9 }), host);
      expect(thrown['retry-after']).toBe('9');
    }
  });

  it('retryAfterOf: the error’s own time, else the default, only for 429 and 503', () => {
    expect(retryAfterOf(new ApiError(503, 'x', undefined, { retryAfterSeconds: 30 }), 503)).toBe(30);
    expect(retryAfterOf(new Error('x'), 503)).toBe(RETRY_AFTER_SECONDS);
    expect(retryAfterOf(new RateLimited('x', 3), 429)).toBe(3);
    expect(retryAfterOf(new ApiError(400, 'x'), 400)).toBeUndefined();
  });
});

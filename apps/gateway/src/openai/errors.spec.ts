import { BadRequestException, NotFoundException } from '@nestjs/common';
import type { DeliberationView } from '@conclave/contracts';
import { ApiError } from '../common/api-error';
import { RateLimited } from '../common/rate-limiter';
import { endedWithoutAnswer } from './chat-run';
import { fieldParam } from './deliberation-plan';
import { errorTypeFor, fromApiErrorBody, OpenAiError, worthRetrying } from './errors';
import { openAiErrorOf } from './openai-error.filter';

describe('OpenAI errors', () => {
  it('maps the product errors, naming the parameter a field came from', () => {
    const invalid = ApiError.invalid({
      question: 'question must be at most 20000 characters (got 20001)',
      'modeConfig.jurorModels': 'Jury mode requires at least 3 juror models',
    });
    expect(openAiErrorOf(invalid, fieldParam({ questionIndex: 2 }))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      param: 'messages[2].content',
      code: null,
      message:
        'Invalid request: messages[2].content (question must be at most 20000 characters (got 20001)); ' +
        'model (Jury mode requires at least 3 juror models)',
    });
    expect(
      openAiErrorOf(ApiError.invalid({ preset: 'no preset named "x"' }), fieldParam({ questionIndex: 0 })),
    ).toMatchObject({
      param: 'model',
      code: 'model_not_found',
    });
  });

  it('gives each status its type and code, and Retry-After where waiting helps', () => {
    expect(openAiErrorOf(new ApiError(401, 'Missing or invalid API key'))).toMatchObject({
      status: 401,
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    });
    expect(openAiErrorOf(new RateLimited('Too many requests', 17))).toMatchObject({
      status: 429,
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      retryAfterSeconds: 17,
    });
    expect(openAiErrorOf(new ApiError(503, 'The job queue is unavailable'))).toMatchObject({
      status: 503,
      type: 'server_error',
      retryAfterSeconds: 5,
    });
    expect(openAiErrorOf(new ApiError(402, 'Over budget'))).toMatchObject({ type: 'insufficient_quota' });
    expect(openAiErrorOf(new NotFoundException())).toMatchObject({ status: 404, code: 'not_found' });
    expect(openAiErrorOf(new BadRequestException('bad'))).toMatchObject({ status: 400, message: 'bad' });
    const own = new OpenAiError({ status: 400, message: 'm', type: 't', param: 'p', code: 'c' });
    expect(openAiErrorOf(own)).toBe(own.spec);
    expect(openAiErrorOf(new Error('boom at /srv/app.ts:12'))).toBeNull();
    expect(errorTypeFor(500)).toBe('server_error');
    expect([429, 503, 400, 409, 502].map(worthRetrying)).toEqual([true, true, false, false, false]);
  });

  it("maps the body parsers' errors (malformed JSON, too large)", () => {
    expect(openAiErrorOf({ type: 'entity.parse.failed', status: 400 })).toMatchObject({
      status: 400,
      code: 'invalid_json',
    });
    expect(
      fromApiErrorBody({
        statusCode: 413,
        error: 'Payload Too Large',
        message: 'Request body is larger than the 256kb limit',
      }),
    ).toMatchObject({ status: 413, code: 'request_too_large', type: 'invalid_request_error' });
  });

  it('a deliberation without its final text: 502 when it failed, 409 when it was cancelled', () => {
    const ended = (status: DeliberationView['status'], error: string | null) =>
      ({ messageId: 'm-1', status, error }) as DeliberationView;
    expect(
      endedWithoutAnswer(ended('failed', 'The chairman failed to synthesize.'), 'http://h/#/m/m-1'),
    ).toEqual({
      status: 502,
      type: 'server_error',
      param: null,
      code: 'deliberation_failed',
      message:
        'The deliberation failed and gave no answer (deliberation m-1, http://h/#/m/m-1): The chairman failed to synthesize.',
    });
    expect(endedWithoutAnswer(ended('cancelled', 'Cancelled by the user.'), null)).toMatchObject({
      status: 409,
      code: 'deliberation_cancelled',
      message: 'The deliberation was cancelled before it finished (deliberation m-1): Cancelled by the user.',
    });
  });
});

import { ModelCallError } from './provider';
import { modelCallErrorFromAbort } from './retry';
import { userFacingCallError } from './user-message';

/** Everything an operator's provider configuration may hold that users must never see. */
const SECRETS = [
  'secretpass',
  'user:',
  '10.0.0.7',
  '8443',
  '/v1',
  'sk-live-0123456789abcdef',
  'llm.internal',
];
const DETAIL =
  'connect ECONNREFUSED 10.0.0.7:8443 while calling http://user:secretpass@llm.internal:8443/v1/chat/completions ' +
  'with key sk-live-0123456789abcdef';

function expectNoSecrets(text: string): void {
  for (const secret of SECRETS)
    expect({ text, secret, found: text.includes(secret) }).toMatchObject({ found: false });
}

describe('userFacingCallError: what users are told about a failed model call', () => {
  it.each<[string, ModelCallError, string]>([
    [
      'an HTTP error',
      new ModelCallError(`HTTP 503 from llm.internal:8443: ${DETAIL}`, 'http', true, 503, undefined, {
        provider: 'openai-compatible',
      }),
      'HTTP 503 from the openai-compatible provider',
    ],
    [
      'an HTTP error of an unnamed provider',
      new ModelCallError(`HTTP 429 from scripted: ${DETAIL}`, 'http', true, 429),
      'HTTP 429 from the provider',
    ],
    [
      'a refused connection',
      new ModelCallError(
        `Network error calling llm.internal:8443: ${DETAIL}`,
        'network',
        true,
        undefined,
        undefined,
        {
          provider: 'openai-compatible',
          reason: 'connection refused',
          code: 'ECONNREFUSED',
        },
      ),
      'Network error calling the openai-compatible provider: connection refused (ECONNREFUSED)',
    ],
    [
      'a connection reset on OpenRouter',
      new ModelCallError(DETAIL, 'network', true, undefined, undefined, {
        provider: 'openrouter',
        reason: 'connection reset',
        code: 'ECONNRESET',
      }),
      'Network error calling the openrouter provider: connection reset (ECONNRESET)',
    ],
    [
      'a network error with nothing more known',
      new ModelCallError(`Provider limiter unavailable: ${DETAIL}`, 'network', true),
      'Network error calling the provider',
    ],
    [
      'a connect timeout',
      new ModelCallError(DETAIL, 'timeout', true, undefined, undefined, {
        provider: 'openai-compatible',
        reason: 'connection timed out',
      }),
      'Connection to the openai-compatible provider timed out',
    ],
    [
      'the call deadline',
      modelCallErrorFromAbort(AbortSignal.abort(new DOMException('t', 'TimeoutError'))),
      'timed out',
    ],
    ['an abort', modelCallErrorFromAbort(AbortSignal.abort()), 'Model call aborted'],
    [
      'an answer that is not JSON',
      new ModelCallError(DETAIL, 'invalid-response', false, undefined, undefined, {
        provider: 'openai-compatible',
        reason: 'body is not valid JSON',
      }),
      'Invalid response from the openai-compatible provider: body is not valid JSON',
    ],
    [
      'an error inside a 200 body',
      new ModelCallError(DETAIL, 'invalid-response', true, 502, undefined, {
        provider: 'openrouter',
        reason: 'error in response body',
      }),
      'Error in response body from the openrouter provider (code 502)',
    ],
    [
      "the simulator's scripted failure",
      new ModelCallError('simulated failure of sim/a:fail', 'http', false, 400, undefined, {
        provider: 'simulated',
        reason: 'simulated failure',
      }),
      'HTTP 400 from the simulated provider: simulated failure',
    ],
  ])('%s', (_label, error, expected) => {
    const message = userFacingCallError(error);
    expect(message).toBe(expected);
    expectNoSecrets(message);
  });

  it('is built from the closed fields only: the free-text message never changes it', () => {
    const context = {
      provider: 'openai-compatible',
      reason: 'connection refused',
      code: 'ECONNREFUSED',
    } as const;
    const plain = new ModelCallError('x', 'network', true, undefined, undefined, context);
    const leaky = new ModelCallError(DETAIL, 'network', true, undefined, undefined, context);
    expect(userFacingCallError(leaky)).toBe(userFacingCallError(plain));
  });

  it('names no provider, reason, code or status outside the known ones, whatever a caller passes', () => {
    const forged = new ModelCallError(DETAIL, 'network', true, 8443, undefined, {
      provider: 'llm.internal:8443',
      reason: DETAIL,
      code: 'user:secretpass',
    } as unknown as ConstructorParameters<typeof ModelCallError>[5]);
    expect(userFacingCallError(forged)).toBe('Network error calling the provider');
    const oddStatus = new ModelCallError(DETAIL, 'http', false, 8443, undefined, { provider: 'openrouter' });
    expect(userFacingCallError(oddStatus)).toBe('HTTP error from the openrouter provider');
  });

  it('says nothing of errors that are not model-call errors', () => {
    expect(userFacingCallError(new Error(DETAIL))).toBe('unexpected provider error');
    expect(userFacingCallError(DETAIL)).toBe('unexpected provider error');
  });
});

import { Completion, CompletionRequest, ModelCallError, ModelProvider, RetryNotice } from './provider';
import { abortableSleep, DEFAULT_RETRY_POLICY, RetryingProvider, Sleep } from './retry';

const OK: Completion = { content: 'hi', servedModel: 'm', usage: null, simulated: false };

/** Plays a scripted list of outcomes, one per call (the last one repeats). */
class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';
  calls = 0;
  constructor(private readonly outcomes: Array<Completion | Error | ((req: CompletionRequest) => never)>) {}

  async complete(request: CompletionRequest): Promise<Completion> {
    const outcome = this.outcomes[Math.min(this.calls, this.outcomes.length - 1)];
    this.calls++;
    if (typeof outcome === 'function') return outcome(request);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }
}

const http = (status: number, retryAfterMs?: number): ModelCallError =>
  new ModelCallError(
    `HTTP ${status} from scripted: boom`,
    'http',
    status === 429 || status >= 500,
    status,
    retryAfterMs,
  );

function recordingSleep(): { sleep: Sleep; delays: number[] } {
  const delays: number[] = [];
  return { delays, sleep: async (ms) => void delays.push(ms) };
}

function request(
  signal: AbortSignal = new AbortController().signal,
  notices?: RetryNotice[],
): CompletionRequest {
  return {
    model: 'm',
    messages: [{ role: 'user', content: 'q' }],
    signal,
    onRetry: notices ? (n) => void notices.push(n) : undefined,
  };
}

describe('RetryingProvider', () => {
  it('uses the default policy and the inner name', () => {
    const provider = new RetryingProvider(new ScriptedProvider([OK]));
    expect(provider.policy).toEqual({ maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 60_000 });
    expect(provider.policy).toEqual(DEFAULT_RETRY_POLICY);
    expect(provider.name).toBe('scripted');
  });

  it('returns the first success without waiting', async () => {
    const inner = new ScriptedProvider([OK]);
    const { sleep, delays } = recordingSleep();
    await expect(new RetryingProvider(inner, { sleep }).complete(request())).resolves.toBe(OK);
    expect(inner.calls).toBe(1);
    expect(delays).toEqual([]);
  });

  it('retries retryable errors with exponential full-jitter backoff and reports each retry', async () => {
    const inner = new ScriptedProvider([http(503), http(500), http(429), OK]);
    const { sleep, delays } = recordingSleep();
    const notices: RetryNotice[] = [];
    const provider = new RetryingProvider(inner, { sleep, random: () => 0.5 });

    await expect(provider.complete(request(undefined, notices))).resolves.toBe(OK);

    expect(inner.calls).toBe(4);
    expect(delays).toEqual([250, 500, 1000]);
    expect(notices).toEqual([
      {
        attempt: 1,
        delayMs: 250,
        reason: 'HTTP 503 from the provider',
        detail: 'HTTP 503 from scripted: boom',
      },
      {
        attempt: 2,
        delayMs: 500,
        reason: 'HTTP 500 from the provider',
        detail: 'HTTP 500 from scripted: boom',
      },
      {
        attempt: 3,
        delayMs: 1000,
        reason: 'HTTP 429 from the provider',
        detail: 'HTTP 429 from scripted: boom',
      },
    ]);
  });

  it('caps the backoff at maxDelayMs', async () => {
    const inner = new ScriptedProvider([http(500)]);
    const { sleep, delays } = recordingSleep();
    const provider = new RetryingProvider(inner, {
      sleep,
      random: () => 0.999,
      policy: { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 3000 },
    });
    await expect(provider.complete(request())).rejects.toMatchObject({ status: 500 });
    expect(delays).toEqual([999, 1998, 2997, 2997, 2997]);
  });

  it('prefers retryAfterMs over backoff', async () => {
    const inner = new ScriptedProvider([http(429, 1500), http(429, 4000), OK]);
    const { sleep, delays } = recordingSleep();
    const provider = new RetryingProvider(inner, { sleep, random: () => 0, policy: { maxDelayMs: 5000 } });
    await expect(provider.complete(request())).resolves.toBe(OK);
    expect(delays).toEqual([1500, 4000]);
  });

  it('fails instead of retrying early when Retry-After is longer than it may wait', async () => {
    const inner = new ScriptedProvider([http(429, 60_000), OK]);
    const { sleep, delays } = recordingSleep();
    const provider = new RetryingProvider(inner, { sleep, policy: { maxDelayMs: 5000 } });
    await expect(provider.complete(request())).rejects.toMatchObject({ status: 429 });
    expect(delays).toEqual([]);
    expect(inner.calls).toBe(1);
  });

  it('gives up after maxAttempts with the last error', async () => {
    const inner = new ScriptedProvider([http(500), http(502), http(503)]);
    const { sleep, delays } = recordingSleep();
    const provider = new RetryingProvider(inner, { sleep, policy: { maxAttempts: 3 } });
    await expect(provider.complete(request())).rejects.toMatchObject({ kind: 'http', status: 503 });
    expect(inner.calls).toBe(3);
    expect(delays).toHaveLength(2);
  });

  it.each([
    ['a non-retryable ModelCallError', http(400)],
    ['an invalid-response error', new ModelCallError('bad body', 'invalid-response', false)],
    ['a foreign error', new TypeError('bug')],
  ])('does not retry %s', async (_label, error) => {
    const inner = new ScriptedProvider([error, OK]);
    const { sleep, delays } = recordingSleep();
    await expect(new RetryingProvider(inner, { sleep }).complete(request())).rejects.toBe(error);
    expect(inner.calls).toBe(1);
    expect(delays).toEqual([]);
  });

  it('does not start when the signal is already aborted', async () => {
    const inner = new ScriptedProvider([OK]);
    const controller = new AbortController();
    controller.abort();
    await expect(new RetryingProvider(inner).complete(request(controller.signal))).rejects.toMatchObject({
      kind: 'aborted',
      retryable: false,
    });
    expect(inner.calls).toBe(0);
  });

  it('does not retry once the signal has aborted, reporting the abort', async () => {
    const controller = new AbortController();
    const inner = new ScriptedProvider([
      () => {
        controller.abort(new DOMException('deadline', 'TimeoutError'));
        throw http(503);
      },
    ]);
    const { sleep, delays } = recordingSleep();
    await expect(
      new RetryingProvider(inner, { sleep }).complete(request(controller.signal)),
    ).rejects.toMatchObject({
      kind: 'timeout',
    });
    expect(inner.calls).toBe(1);
    expect(delays).toEqual([]);
  });

  it('stops waiting as soon as the signal times out', async () => {
    const inner = new ScriptedProvider([http(429, 10_000)]);
    const notices: RetryNotice[] = [];
    const started = Date.now();
    await expect(
      new RetryingProvider(inner).complete(request(AbortSignal.timeout(50), notices)),
    ).rejects.toMatchObject({ kind: 'timeout', retryable: false });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(inner.calls).toBe(1);
    expect(notices).toEqual([
      {
        attempt: 1,
        delayMs: 10_000,
        reason: 'HTTP 429 from the provider',
        detail: 'HTTP 429 from scripted: boom',
      },
    ]);
  });

  it('retries a streamed call that failed before writing anything, and not once part of it was shown', async () => {
    const deltas: string[] = [];
    const streamed = (req: CompletionRequest) => ({ ...req, onDelta: (t: string) => deltas.push(t) });
    const { sleep } = recordingSleep();
    const early = new ScriptedProvider([http(503), OK]);
    await expect(new RetryingProvider(early, { sleep }).complete(streamed(request()))).resolves.toEqual(OK);
    expect(early.calls).toBe(2);

    const cutOff = new ScriptedProvider([
      (req: CompletionRequest) => {
        req.onDelta?.('Half an ');
        throw http(503);
      },
      OK,
    ]);
    const failed = new RetryingProvider(cutOff, { sleep }).complete(streamed(request()));
    await expect(failed).rejects.toMatchObject({ status: 503 });
    expect(cutOff.calls).toBe(1);
    expect(deltas).toEqual(['Half an ']);
  });

  it('rejects a nonsensical maxAttempts', () => {
    expect(() => new RetryingProvider(new ScriptedProvider([OK]), { policy: { maxAttempts: 0 } })).toThrow(
      RangeError,
    );
  });
});

describe('abortableSleep', () => {
  it('resolves after the delay', async () => {
    await expect(abortableSleep(5, new AbortController().signal)).resolves.toBeUndefined();
  });

  it('rejects with kind aborted on a plain abort', async () => {
    const controller = new AbortController();
    const pending = abortableSleep(10_000, controller.signal);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'ModelCallError', kind: 'aborted' });
  });

  it('rejects with kind timeout when the reason is a TimeoutError', async () => {
    await expect(abortableSleep(10_000, AbortSignal.timeout(10))).rejects.toMatchObject({ kind: 'timeout' });
  });

  it('rejects immediately when already aborted', async () => {
    await expect(abortableSleep(10_000, AbortSignal.abort())).rejects.toMatchObject({ kind: 'aborted' });
  });
});

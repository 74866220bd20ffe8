import { Completion, CompletionRequest, ModelCallError, ModelProvider } from './provider';
import { userFacingCallError } from './user-message';

export interface RetryPolicy {
  /** Total attempts including the first one. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 60_000,
});

/** Waits `ms`, rejecting with a ModelCallError as soon as `signal` aborts. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

export interface RetryingProviderOptions {
  policy?: Partial<RetryPolicy>;
  sleep?: Sleep;
  /** Uniform in [0, 1); injectable so tests can pin the jitter. */
  random?: () => number;
}

/** Maps an aborted signal to the error the rest of the system expects. */
export function modelCallErrorFromAbort(signal: AbortSignal): ModelCallError {
  return isTimeoutReason(signal.reason)
    ? new ModelCallError('Model call timed out', 'timeout', false)
    : new ModelCallError('Model call aborted', 'aborted', false);
}

function isTimeoutReason(reason: unknown): boolean {
  // Duck-typed: DOMException identity differs across realms (e.g. jest's vm context).
  return typeof reason === 'object' && reason !== null && 'name' in reason && reason.name === 'TimeoutError';
}

export const abortableSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(modelCallErrorFromAbort(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(modelCallErrorFromAbort(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The single owner of retries for model calls: retries transient failures
 * (ModelCallError with `retryable`) with capped exponential backoff and full jitter,
 * honouring the server's Retry-After when it sent one.
 */
export class RetryingProvider implements ModelProvider {
  readonly name: string;
  readonly key?: string;
  readonly policy: Readonly<RetryPolicy>;
  private readonly sleep: Sleep;
  private readonly random: () => number;

  constructor(
    private readonly inner: ModelProvider,
    options: RetryingProviderOptions = {},
  ) {
    this.name = inner.name;
    if (inner.key !== undefined) this.key = inner.key;
    this.policy = Object.freeze({ ...DEFAULT_RETRY_POLICY, ...options.policy });
    if (!Number.isInteger(this.policy.maxAttempts) || this.policy.maxAttempts < 1) {
      throw new RangeError(`RetryPolicy.maxAttempts must be an integer >= 1, got ${this.policy.maxAttempts}`);
    }
    this.sleep = options.sleep ?? abortableSleep;
    this.random = options.random ?? Math.random;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const { signal, onDelta } = request;
    // Once part of an answer was shown, a retry would show a second, different answer after it:
    // the call fails instead (its partial text stays what the user saw).
    let shown = false;
    const attemptRequest: CompletionRequest = onDelta
      ? {
          ...request,
          onDelta: (text) => {
            shown = true;
            onDelta(text);
          },
        }
      : request;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw modelCallErrorFromAbort(signal);
      try {
        return await this.inner.complete(attemptRequest);
      } catch (err) {
        if (!(err instanceof ModelCallError) || !err.retryable || shown) throw err;
        // A transient error raced with the abort: the abort is the real story.
        if (signal.aborted) throw modelCallErrorFromAbort(signal);
        if (attempt >= this.policy.maxAttempts) throw err;
        // Retrying before the provider's Retry-After would only be refused again.
        if (err.retryAfterMs !== undefined && err.retryAfterMs > this.policy.maxDelayMs) throw err;
        const delayMs = this.delayFor(err, attempt);
        await request.onRetry?.({ attempt, delayMs, reason: userFacingCallError(err), detail: err.message });
        await this.sleep(delayMs, signal);
      }
    }
  }

  /** `attempt` is the 1-based number of the attempt that just failed. */
  delayFor(err: ModelCallError, attempt: number): number {
    const { baseDelayMs, maxDelayMs } = this.policy;
    if (err.retryAfterMs !== undefined && Number.isFinite(err.retryAfterMs)) {
      return Math.round(Math.max(err.retryAfterMs, 0));
    }
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    return Math.round(this.random() * ceiling);
  }
}

import { ModelCallError, userFacingCallError } from '@conclave/llm';

/** A failed model call or attempt, as the operator's log gets it. */
export interface CallFailureDetail {
  stage: string;
  model: string;
  /** The provider's message: may name hosts and quote the provider (credentials already removed). */
  detail: string;
  kind?: string;
  status?: number;
  /** Set when the attempt is retried: which one failed, and the wait before the next. */
  retry?: { attempt: number; delayMs: number };
}

/**
 * A short reason a user can act on: the provider's key and the failure kind, never a host, URL,
 * credential, stack trace or the provider's own words (userFacingCallError). What is stored for
 * users (model_calls.error, stage rows, events, the message's error) is built from this.
 */
export function describeCallError(error: unknown): string {
  return userFacingCallError(error);
}

export function callFailureDetail(stage: string, model: string, error: unknown): CallFailureDetail {
  if (error instanceof ModelCallError) {
    return { stage, model, detail: error.message, kind: error.kind, status: error.status };
  }
  return { stage, model, detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

/**
 * The signal a call runs under: aborted with a TimeoutError after `timeoutMs`, or with `abandon`'s
 * reason. Not AbortSignal.any([AbortSignal.timeout(…), …]): on Node 20 the composite holds its
 * sources weakly, so a long timeout can be garbage-collected before it fires and the call then
 * never ends (nodejs/node#57736). Here the timer holds the controller until `dispose`.
 */
export function callDeadline(
  timeoutMs: number,
  ...abandon: (AbortSignal | undefined)[]
): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The model call timed out', 'TimeoutError')),
    timeoutMs,
  );
  const sources = abandon.filter((signal): signal is AbortSignal => signal !== undefined);
  const listeners = sources.map((source) => {
    const onAbandon = () => controller.abort(source.reason);
    if (source.aborted) onAbandon();
    else source.addEventListener('abort', onAbandon, { once: true });
    return () => source.removeEventListener('abort', onAbandon);
  });
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      for (const remove of listeners) remove();
    },
  };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface RetryNotice {
  /** 1-based number of the attempt that failed and is about to be retried. */
  attempt: number;
  delayMs: number;
  /** Why, in words a user may see (userFacingCallError): the provider's key and the failure kind. */
  reason: string;
  /** The full detail (hosts, the provider's own message) for the operator's log only. */
  detail?: string;
}

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  /** Aborts the call (timeout or shutdown); a provider must stop waiting as soon as it fires. */
  signal: AbortSignal;
  /** Awaited before the wait, so a progress report lands before the retry's outcome. */
  onRetry?: (notice: RetryNotice) => void | Promise<void>;
  /**
   * Hears each piece of the answer as it is written (providers that stream). Pieces arrive in
   * order and add up to the attempt's content; once one was heard the call is not retried.
   */
  onDelta?: (text: string) => void;
  /**
   * A graded run's expected answer for the item (issue 37). Never sent to a model: only the
   * simulated provider reads it, to make a member right as often as its `acc<N>` directive says
   * (libs/deliberation/src/shared/graded-simulation.ts). Absent: no accuracy simulation.
   */
  expected?: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** null when the provider does not report a cost. */
  costUsd: number | null;
}

export interface Completion {
  content: string;
  /** The model the provider says served the call (may differ from the one asked for). */
  servedModel: string;
  usage: TokenUsage | null;
  simulated: boolean;
  /**
   * Why generation stopped, as the provider said: 'length' means the answer was cut off at the
   * token limit (truncated); null when the provider did not say.
   */
  finishReason?: FinishReason | null;
}

import type { FinishReason } from '@conclave/contracts';

export type { FinishReason } from '@conclave/contracts';

export interface ModelProvider {
  /** For logs: may hold a host and port (an OpenAI-compatible provider's is its base URL's host). */
  readonly name: string;
  /** The stable key users and metrics see (PROVIDER_KEYS: openrouter, openai-compatible, simulated). */
  readonly key?: string;
  complete(request: CompletionRequest): Promise<Completion>;
}

export type ModelCallErrorKind = 'timeout' | 'aborted' | 'http' | 'network' | 'invalid-response';

/** What went wrong with a call, from a closed list: the only words about a failure users are shown. */
export const FAILURE_REASONS = [
  'connection refused',
  'connection reset',
  'connection timed out',
  'connection lost',
  'connection lost while reading the response',
  'host unreachable',
  'network unreachable',
  'host name not resolved',
  'body is not a JSON object',
  'body is not valid JSON',
  'no choices',
  'empty content',
  'generation failed (finish_reason: error)',
  'error in response body',
  'simulated failure',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Socket-level error codes a network failure may be reported with (also a closed list). */
export const NETWORK_ERROR_CODES = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
] as const;
export type NetworkErrorCode = (typeof NETWORK_ERROR_CODES)[number];

/** The structured side of a ModelCallError, from which alone the user-facing text is built. */
export interface ModelCallErrorContext {
  /** The provider's key (PROVIDER_KEYS), never its host. */
  provider?: string;
  reason?: FailureReason;
  code?: NetworkErrorCode;
}

/**
 * The one error type providers throw; `retryable` tells the retry policy what to do with it.
 * `message` is the detail for the operator's log (credentials removed, hosts kept); what users
 * see is built from the other fields only (userFacingCallError).
 */
export class ModelCallError extends Error {
  readonly provider?: string;
  readonly reason?: FailureReason;
  readonly code?: NetworkErrorCode;

  constructor(
    message: string,
    readonly kind: ModelCallErrorKind,
    readonly retryable: boolean,
    readonly status?: number,
    readonly retryAfterMs?: number,
    context: ModelCallErrorContext = {},
  ) {
    super(message);
    this.name = 'ModelCallError';
    if (context.provider !== undefined) this.provider = context.provider;
    if (context.reason !== undefined) this.reason = context.reason;
    if (context.code !== undefined) this.code = context.code;
  }
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface RetryNotice {
  /** 1-based number of the attempt that failed and is about to be retried. */
  attempt: number;
  delayMs: number;
  reason: string;
}

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  /** Aborts the call (timeout or shutdown); a provider must stop waiting as soon as it fires. */
  signal: AbortSignal;
  /** Awaited before the wait, so a progress report lands before the retry's outcome. */
  onRetry?: (notice: RetryNotice) => void | Promise<void>;
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
}

export interface ModelProvider {
  readonly name: string;
  complete(request: CompletionRequest): Promise<Completion>;
}

export type ModelCallErrorKind = 'timeout' | 'aborted' | 'http' | 'network' | 'invalid-response';

/** The one error type providers throw; `retryable` tells the retry policy what to do with it. */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly kind: ModelCallErrorKind,
    readonly retryable: boolean,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ModelCallError';
  }
}

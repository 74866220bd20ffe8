import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { PROVIDER_KEYS, type ProviderKey } from './fleet-limits';
import { Completion, CompletionRequest, ModelCallError, ModelProvider, TokenUsage } from './provider';
import { DEFAULT_RETRY_POLICY, RetryingProvider, RetryPolicy, modelCallErrorFromAbort } from './retry';

export interface OpenAiCompatibleOptions {
  baseURL: string;
  apiKey: string;
  name?: string;
  defaultHeaders?: Record<string, string>;
  /**
   * Conclave ids are `provider/name`; local servers (Ollama, vLLM, llama.cpp) know bare names.
   * Ids under this prefix are sent without it: `local/llama3.2` goes out as `llama3.2`.
   */
  stripModelPrefix?: string;
}

/** The caller's signal governs deadlines; this only stops the SDK's own 10-minute default from interfering. */
const SDK_TIMEOUT_MS = 24 * 60 * 60 * 1000;
const MAX_ERROR_MESSAGE_CHARS = 200;

/** A chat-completions provider (OpenAI, OpenRouter, vLLM, ...) via the official SDK, without SDK retries. */
export class OpenAiCompatibleProvider implements ModelProvider {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly apiKey: string;

  private readonly stripPrefix: string | null;

  constructor(options: OpenAiCompatibleOptions) {
    this.stripPrefix = options.stripModelPrefix ? `${options.stripModelPrefix}/` : null;
    this.name = options.name ?? hostOf(options.baseURL);
    this.apiKey = options.apiKey;
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
      defaultHeaders: options.defaultHeaders,
    });
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const { signal } = request;
    if (signal.aborted) throw modelCallErrorFromAbort(signal);

    // The SDK adds an abort listener to the signal it is given and never removes it;
    // a per-call child signal keeps long-lived caller signals from accumulating listeners.
    const child = new AbortController();
    const forward = (): void => child.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });

    let body: unknown;
    try {
      body = await this.client.chat.completions.create(
        { model: this.wireModel(request.model), messages: request.messages },
        { signal: child.signal },
      );
    } catch (err) {
      throw this.mapError(err, signal);
    } finally {
      signal.removeEventListener('abort', forward);
    }
    return this.mapResponse(body, request.model);
  }

  private wireModel(model: string): string {
    return this.stripPrefix && model.startsWith(this.stripPrefix)
      ? model.slice(this.stripPrefix.length)
      : model;
  }

  private mapResponse(body: unknown, requestedModel: string): Completion {
    if (!isRecord(body)) {
      throw new ModelCallError(
        `Invalid response from ${this.name}: body is not a JSON object`,
        'invalid-response',
        false,
      );
    }
    // Gateways such as OpenRouter report upstream failures inside a 200 body.
    if (isRecord(body.error)) {
      const code = numericCode(body.error.code);
      const message = typeof body.error.message === 'string' ? body.error.message : 'unknown error';
      throw new ModelCallError(
        `Error in response body from ${this.name}${code === undefined ? '' : ` (code ${code})`}: ${this.clean(message)}`,
        'invalid-response',
        code !== undefined && isRetryableStatus(code),
        code,
      );
    }
    const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
    if (!isRecord(choice)) {
      throw new ModelCallError(`Invalid response from ${this.name}: no choices`, 'invalid-response', false);
    }
    const finishReason = typeof choice.finish_reason === 'string' ? choice.finish_reason : null;
    if (finishReason === 'error') {
      throw new ModelCallError(
        `Generation failed at ${this.name} (finish_reason: error)`,
        'invalid-response',
        false,
      );
    }
    const content = isRecord(choice.message) ? choice.message.content : undefined;
    if (typeof content !== 'string' || content.length === 0) {
      throw new ModelCallError(
        `Invalid response from ${this.name}: empty content (finish_reason: ${finishReason ?? 'none'})`,
        'invalid-response',
        false,
      );
    }
    return {
      content,
      servedModel: typeof body.model === 'string' && body.model.length > 0 ? body.model : requestedModel,
      usage: parseUsage(body.usage),
      simulated: false,
    };
  }

  private mapError(err: unknown, signal: AbortSignal): ModelCallError {
    if (err instanceof ModelCallError) return err;
    // Whatever the SDK threw (user-abort, or a body read torn down mid-way), our signal explains it.
    if (signal.aborted) return modelCallErrorFromAbort(signal);
    if (err instanceof APIUserAbortError) {
      return new ModelCallError(`Call to ${this.name} aborted`, 'aborted', false);
    }
    // Order matters: the timeout class extends the connection class, which extends APIError.
    if (err instanceof APIConnectionTimeoutError) {
      // Not our deadline, so a transport-level timeout (e.g. connect): worth another try.
      return new ModelCallError(`Connection to ${this.name} timed out`, 'timeout', true);
    }
    if (err instanceof APIConnectionError) {
      const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
      const code = networkErrorCode(err);
      return new ModelCallError(
        `Network error calling ${this.name}${this.clean(cause)}${code ? ` (${code})` : ''}`,
        'network',
        true,
      );
    }
    // A connection lost after the headers arrived fails while the SDK reads the body, outside
    // its APIConnectionError: still a transient network failure (00-shared.md §2), so retryable.
    const lost = networkErrorCode(err);
    if (lost) {
      return new ModelCallError(
        `Network error calling ${this.name}: connection lost while reading the response (${lost})`,
        'network',
        true,
      );
    }
    if (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'SyntaxError') {
      return new ModelCallError(
        `Invalid response from ${this.name}: body is not valid JSON`,
        'invalid-response',
        false,
      );
    }
    if (err instanceof APIError && typeof err.status === 'number') {
      const status = err.status;
      return new ModelCallError(
        `HTTP ${status} from ${this.name}: ${this.clean(apiErrorMessage(err))}`,
        'http',
        isRetryableStatus(status),
        status,
        err.headers ? parseRetryAfter(err.headers) : undefined,
      );
    }
    const message = err instanceof Error ? err.message : String(err);
    return new ModelCallError(
      `Unexpected error calling ${this.name}: ${this.clean(message)}`,
      'network',
      false,
    );
  }

  /** Truncates and strips the API key, so messages are safe to log and persist. */
  private clean(message: string): string {
    let out = message.replace(/\s+/g, ' ').trim();
    if (this.apiKey.length >= 4) out = out.split(this.apiKey).join('***');
    return out.length > MAX_ERROR_MESSAGE_CHARS ? `${out.slice(0, MAX_ERROR_MESSAGE_CHARS)}…` : out;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const NETWORK_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/**
 * The socket-level code (ECONNRESET, ...) somewhere in an error's cause chain, or for undici's
 * bare "terminated" (the body stream died with its connection) that code or UND_ERR_SOCKET.
 */
function networkErrorCode(err: unknown): string | undefined {
  let terminated = false;
  let current: unknown = err;
  // Duck-typed: fetch's errors come from Node's own realm, not necessarily the caller's (jest).
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { code, name, message, cause } = current as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return code;
    if (name === 'TypeError' && message === 'terminated') terminated = true;
    current = cause;
  }
  return terminated ? 'UND_ERR_SOCKET' : undefined;
}

function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

function numericCode(code: unknown): number | undefined {
  const n = typeof code === 'number' ? code : typeof code === 'string' ? Number(code) : NaN;
  return Number.isInteger(n) ? n : undefined;
}

function apiErrorMessage(err: APIError): string {
  const body = err.error;
  if (isRecord(body) && typeof body.message === 'string' && body.message.length > 0) return body.message;
  // The SDK prefixes its message with the status; drop it since ours carries it already.
  return err.message.replace(/^\d{3}\s+/, '');
}

function parseUsage(usage: unknown): TokenUsage | null {
  if (!isRecord(usage)) return null;
  const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    promptTokens: count(usage.prompt_tokens),
    completionTokens: count(usage.completion_tokens),
    costUsd: typeof usage.cost === 'number' && Number.isFinite(usage.cost) ? usage.cost : null,
  };
}

/** `retry-after-ms` (non-standard, used by OpenAI/Azure) wins over `retry-after` (seconds or HTTP date). */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const raw = headers.get('retry-after')?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function hostOf(baseURL: string): string {
  try {
    return new URL(baseURL).host;
  } catch {
    return 'openai-compatible';
  }
}

const OPENROUTER_DEFAULT_BASE_URL = 'https://openrouter.ai/api/v1';
const OPENROUTER_DEFAULT_REFERER = 'https://github.com/conclave';

export interface ProviderFromEnvOptions {
  /**
   * Wraps the HTTP provider inside the retry policy, so the wrapper sees every attempt
   * (the worker puts fleet limits there). `key` names the provider for PROVIDER_LIMITS.
   */
  wrap?: (provider: ModelProvider, key: ProviderKey) => ModelProvider;
}

/**
 * Builds the configured provider (wrapped in the retry policy), or null when no
 * provider is configured. OpenRouter takes precedence over a plain OpenAI-compatible endpoint.
 */
export function providerFromEnv(
  env: NodeJS.ProcessEnv,
  options: ProviderFromEnvOptions = {},
): ModelProvider | null {
  let provider: OpenAiCompatibleProvider;
  let key: ProviderKey;
  if (env.OPENROUTER_API_KEY) {
    key = PROVIDER_KEYS.openrouter;
    provider = new OpenAiCompatibleProvider({
      name: 'openrouter',
      baseURL: env.OPENROUTER_BASE_URL || OPENROUTER_DEFAULT_BASE_URL,
      apiKey: env.OPENROUTER_API_KEY,
      defaultHeaders: {
        'HTTP-Referer': env.OPENROUTER_REFERER || OPENROUTER_DEFAULT_REFERER,
        'X-Title': 'Conclave',
      },
    });
  } else if (env.OPENAI_BASE_URL) {
    key = PROVIDER_KEYS.openaiCompatible;
    provider = new OpenAiCompatibleProvider({
      baseURL: env.OPENAI_BASE_URL,
      apiKey: env.OPENAI_API_KEY || 'not-needed',
      stripModelPrefix: env.OPENAI_MODEL_PREFIX || 'local',
    });
  } else {
    return null;
  }
  const inner = options.wrap ? options.wrap(provider, key) : provider;
  return new RetryingProvider(inner, { policy: retryPolicyFromEnv(env) });
}

function retryPolicyFromEnv(env: NodeJS.ProcessEnv): RetryPolicy {
  return {
    ...DEFAULT_RETRY_POLICY,
    maxAttempts: intFromEnv(env, 'LLM_MAX_ATTEMPTS', DEFAULT_RETRY_POLICY.maxAttempts, 1),
    baseDelayMs: intFromEnv(env, 'LLM_RETRY_BASE_MS', DEFAULT_RETRY_POLICY.baseDelayMs, 0),
  };
}

function intFromEnv(env: NodeJS.ProcessEnv, key: string, fallback: number, min: number): number {
  const raw = env[key]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${key} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

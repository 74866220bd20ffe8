import { withoutCredentials } from './url-credentials';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { PROVIDER_KEYS, type ProviderKey } from './fleet-limits';
import {
  Completion,
  CompletionRequest,
  ModelCallError,
  ModelCallErrorContext,
  ModelCallErrorKind,
  ModelProvider,
  TokenUsage,
} from './provider';
import { NETWORK_REASONS, networkErrorCode } from './network-errors';
import { DEFAULT_RETRY_POLICY, RetryingProvider, RetryPolicy, modelCallErrorFromAbort } from './retry';

export interface OpenAiCompatibleOptions {
  /**
   * May carry credentials (`https://user:pass@proxy.internal/v1`, a reverse proxy with Basic
   * authentication): they are taken out of the URL and sent as an `Authorization: Basic` header
   * in place of the bearer key.
   */
  baseURL: string;
  apiKey: string;
  /** For logs; defaults to the base URL's host and port (never its credentials). */
  name?: string;
  /** The stable key users and metrics see instead of the host (PROVIDER_KEYS); `openai-compatible` by default. */
  key?: string;
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
/** The user and password part of any URL in a text: `scheme://user:pass@`. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;

/** A chat-completions provider (OpenAI, OpenRouter, vLLM, ...) via the official SDK, without SDK retries. */
export class OpenAiCompatibleProvider implements ModelProvider {
  readonly name: string;
  readonly key: string;
  private readonly client: OpenAI;
  /** The API key and the base URL's password, as given and URL-encoded: never in a message. */
  private readonly secrets: string[];

  private readonly stripPrefix: string | null;

  constructor(options: OpenAiCompatibleOptions) {
    this.stripPrefix = options.stripModelPrefix ? `${options.stripModelPrefix}/` : null;
    const { baseURL, basicAuth, password } = splitCredentials(options.baseURL);
    this.name = options.name ?? hostOf(baseURL);
    this.key = options.key ?? PROVIDER_KEYS.openaiCompatible;
    this.secrets = [options.apiKey, password, password && encodeURIComponent(password)].filter(
      (secret): secret is string => typeof secret === 'string' && secret.length >= 4,
    );
    this.client = new OpenAI({
      baseURL,
      apiKey: options.apiKey,
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
      // Fetch refuses URLs with credentials: they travel as Basic authentication, which replaces the bearer key.
      defaultHeaders: basicAuth
        ? { ...options.defaultHeaders, Authorization: basicAuth }
        : options.defaultHeaders,
    });
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const { signal } = request;
    if (signal.aborted) throw modelCallErrorFromAbort(signal);

    // The SDK adds an abort listener to the signal it is given and never removes it;
    // a per-call child signal keeps long-lived caller signals from accumulating listeners.
    // It stays linked until the whole stream is read, so a stall mid-stream ends the read too.
    const child = new AbortController();
    const forward = (): void => child.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });

    try {
      const { data: stream, response } = await this.client.chat.completions
        .create(
          {
            model: this.wireModel(request.model),
            messages: request.messages,
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal: child.signal },
        )
        .withResponse();
      // A server that ignores `stream: true` answers with one JSON body (or anything else).
      if (mediaType(response) !== 'text/event-stream') {
        return this.mapResponse(await readNonStreamBody(response), request.model);
      }
      return await this.readStream(stream, request);
    } catch (err) {
      if (err instanceof DeltaListenerError) throw err.cause;
      throw this.mapError(err, signal);
    } finally {
      signal.removeEventListener('abort', forward);
      // Releases the connection if reading stopped early (a failure, a throwing listener).
      child.abort();
    }
  }

  /**
   * Reads a chat-completions event stream: the content is the sum of the chunks' deltas (each
   * handed to `onDelta`), usage (and OpenRouter's cost) comes with the final chunk.
   */
  private async readStream(stream: AsyncIterable<unknown>, request: CompletionRequest): Promise<Completion> {
    let content = '';
    let servedModel: string | undefined;
    let usage: TokenUsage | null = null;
    let finishReason: string | null = null;
    for await (const chunk of stream) {
      if (!isRecord(chunk)) continue;
      if (typeof chunk.model === 'string' && chunk.model.length > 0) servedModel = chunk.model;
      if (isRecord(chunk.usage)) usage = parseUsage(chunk.usage);
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      if (!isRecord(choice)) continue;
      const piece = isRecord(choice.delta) ? choice.delta.content : undefined;
      if (typeof piece === 'string' && piece.length > 0) {
        content += piece;
        if (request.onDelta) {
          try {
            request.onDelta(piece);
          } catch (err) {
            throw new DeltaListenerError(err);
          }
        }
      }
      if (typeof choice.finish_reason === 'string') finishReason = choice.finish_reason;
    }
    // The SDK ends the iteration quietly when the request is aborted: our signal says why.
    if (request.signal.aborted) throw modelCallErrorFromAbort(request.signal);
    if (finishReason === null) {
      // The body ended without a finish_reason (a cut-off stream): as transient as a reset.
      throw this.error(
        `Network error calling ${this.name}: connection lost while reading the response (stream ended before finish_reason)`,
        'network',
        true,
        { reason: 'connection lost while reading the response' },
      );
    }
    return this.completion(content, finishReason, servedModel ?? request.model, usage);
  }

  private wireModel(model: string): string {
    return this.stripPrefix && model.startsWith(this.stripPrefix)
      ? model.slice(this.stripPrefix.length)
      : model;
  }

  /** A ModelCallError whose user-facing side names this provider's key and `reason`. */
  private error(
    message: string,
    kind: ModelCallErrorKind,
    retryable: boolean,
    context: Omit<ModelCallErrorContext, 'provider'> & { status?: number; retryAfterMs?: number } = {},
  ): ModelCallError {
    const { status, retryAfterMs, ...rest } = context;
    return new ModelCallError(message, kind, retryable, status, retryAfterMs, {
      provider: this.key,
      ...rest,
    });
  }

  private mapResponse(body: unknown, requestedModel: string): Completion {
    if (!isRecord(body)) {
      throw this.error(
        `Invalid response from ${this.name}: body is not a JSON object`,
        'invalid-response',
        false,
        {
          reason: 'body is not a JSON object',
        },
      );
    }
    // Gateways such as OpenRouter report upstream failures inside a 200 body.
    if (isRecord(body.error)) throw this.bodyError(body.error);
    const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
    if (!isRecord(choice)) {
      throw this.error(`Invalid response from ${this.name}: no choices`, 'invalid-response', false, {
        reason: 'no choices',
      });
    }
    const finishReason = typeof choice.finish_reason === 'string' ? choice.finish_reason : null;
    const content = isRecord(choice.message) ? choice.message.content : undefined;
    return this.completion(
      typeof content === 'string' ? content : '',
      finishReason,
      typeof body.model === 'string' && body.model.length > 0 ? body.model : requestedModel,
      parseUsage(body.usage),
    );
  }

  /** The checks a whole answer passes, streamed or not. */
  private completion(
    content: string,
    finishReason: string | null,
    servedModel: string,
    usage: TokenUsage | null,
  ): Completion {
    if (finishReason === 'error') {
      throw this.error(
        `Generation failed at ${this.name} (finish_reason: error)`,
        'invalid-response',
        false,
        {
          reason: 'generation failed (finish_reason: error)',
        },
      );
    }
    if (content.length === 0) {
      throw this.error(
        `Invalid response from ${this.name}: empty content (finish_reason: ${this.clean(finishReason ?? 'none')})`,
        'invalid-response',
        false,
        { reason: 'empty content' },
      );
    }
    return { content, servedModel, usage, simulated: false, finishReason: toFinishReason(finishReason) };
  }

  /** An `{ error: { code, message } }` object in a 200 body or stream; retryable for a 429/5xx code. */
  private bodyError(error: Record<string, unknown>): ModelCallError {
    const code = numericCode(error.code);
    const message = typeof error.message === 'string' ? error.message : 'unknown error';
    return this.error(
      `Error in response body from ${this.name}${code === undefined ? '' : ` (code ${code})`}: ${this.clean(message)}`,
      'invalid-response',
      code !== undefined && isRetryableStatus(code),
      { status: code, reason: 'error in response body' },
    );
  }

  private mapError(err: unknown, signal: AbortSignal): ModelCallError {
    if (err instanceof ModelCallError) return err;
    // Whatever the SDK threw (user-abort, or a body read torn down mid-way), our signal explains it.
    if (signal.aborted) return modelCallErrorFromAbort(signal);
    if (err instanceof APIUserAbortError) {
      return this.error(`Call to ${this.name} aborted`, 'aborted', false);
    }
    // Order matters: the timeout class extends the connection class, which extends APIError.
    if (err instanceof APIConnectionTimeoutError) {
      // Not our deadline, so a transport-level timeout (e.g. connect): worth another try.
      return this.error(`Connection to ${this.name} timed out`, 'timeout', true, {
        reason: 'connection timed out',
      });
    }
    if (err instanceof APIConnectionError) {
      const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
      const code = networkErrorCode(err, true);
      return this.error(
        `Network error calling ${this.name}${this.clean(cause)}${code ? ` (${code})` : ''}`,
        'network',
        true,
        {
          ...(code ? { code, reason: NETWORK_REASONS[code] } : {}),
        },
      );
    }
    // A connection lost after the headers arrived fails while the SDK reads the body, outside
    // its APIConnectionError: still a transient network failure (00-shared.md §2), so retryable.
    const lost = networkErrorCode(err, true);
    if (lost) {
      return this.error(
        `Network error calling ${this.name}: connection lost while reading the response (${lost})`,
        'network',
        true,
        { code: lost, reason: 'connection lost while reading the response' },
      );
    }
    if (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'SyntaxError') {
      return this.error(
        `Invalid response from ${this.name}: body is not valid JSON`,
        'invalid-response',
        false,
        {
          reason: 'body is not valid JSON',
        },
      );
    }
    // The SDK throws an error object met inside a 200 event stream as a status-less APIError.
    if (err instanceof APIError && err.status === undefined && isRecord(err.error)) {
      return this.bodyError(err.error);
    }
    if (err instanceof APIError && typeof err.status === 'number') {
      const status = err.status;
      return this.error(
        `HTTP ${status} from ${this.name}: ${this.clean(apiErrorMessage(err))}`,
        'http',
        isRetryableStatus(status),
        {
          status,
          retryAfterMs: err.headers ? parseRetryAfter(err.headers) : undefined,
        },
      );
    }
    const message = err instanceof Error ? err.message : String(err);
    return this.error(`Unexpected error calling ${this.name}: ${this.clean(message)}`, 'network', false);
  }

  /**
   * Truncates, and strips the API key, the base URL's password and any URL's credentials, so
   * messages are safe to log. Users never see them (userFacingCallError).
   */
  private clean(message: string): string {
    let out = message.replace(/\s+/g, ' ').trim().replace(URL_CREDENTIALS, '$1[redacted]@');
    for (const secret of this.secrets) out = out.split(secret).join('***');
    return out.length > MAX_ERROR_MESSAGE_CHARS ? `${out.slice(0, MAX_ERROR_MESSAGE_CHARS)}…` : out;
  }
}

/** A base URL without its user and password, and those as a Basic `Authorization` value (null without). */
function splitCredentials(baseURL: string): {
  baseURL: string;
  basicAuth: string | null;
  password: string | null;
} {
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return { baseURL, basicAuth: null, password: null };
  }
  const { url: bare, basicAuth, password } = withoutCredentials(url);
  return basicAuth === null
    ? { baseURL, basicAuth, password }
    : { baseURL: bare.toString(), basicAuth, password };
}

/** Wraps what an `onDelta` listener threw, so it reaches the caller as it was, not as a call failure. */
class DeltaListenerError extends Error {
  constructor(override readonly cause: unknown) {
    super('onDelta listener failed');
  }
}

const FINISH_REASONS: ReadonlySet<string> = new Set(['stop', 'length', 'content_filter', 'tool_calls']);

function toFinishReason(value: string | null): Completion['finishReason'] {
  if (value === null) return null;
  return FINISH_REASONS.has(value) ? (value as NonNullable<Completion['finishReason']>) : 'other';
}

function mediaType(response: Response): string | undefined {
  return response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
}

/** As the SDK reads a non-streamed answer: JSON for a JSON media type (a SyntaxError if it is not), else text. */
async function readNonStreamBody(response: Response): Promise<unknown> {
  const type = mediaType(response);
  const text = await response.text();
  if (text === '') return undefined;
  if (type !== undefined && (type.includes('application/json') || type.endsWith('+json'))) {
    return JSON.parse(text) as unknown;
  }
  return text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
      key,
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
      key,
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

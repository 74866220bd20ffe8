import { withoutCredentials } from './url-credentials';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import {
  isModelId,
  type ModelEntry,
  type ModelPricing,
  type ModelSource,
  type ModelSourceStatus,
  type ModelsResponse,
} from '@conclave/contracts';
import { NETWORK_REASONS, networkErrorCode } from './network-errors';
import type { NetworkErrorCode } from './provider';
import { SIM_DIRECTIVES, SIM_PROMPT_KINDS, simulatedPanel } from './simulated-panel';

/**
 * The model lists behind GET /api/models: OpenRouter's catalogue (`GET {base}/models`, with
 * context lengths and prices) and an OpenAI-compatible server's own list (`GET {baseURL}/models`
 * through the official SDK), each cached in memory and fetched again once `refreshMs` old. What
 * comes back is external input: bounded in bytes, entries and string lengths, reduced to plain
 * text, and only ids a roster accepts are kept. Plain TypeScript, no framework.
 */

export type RemoteSource = Exclude<ModelSource, 'simulated'>;

/** Most bytes read of one list (OpenRouter's whole catalogue is a few MB). */
export const MAX_CATALOGUE_BYTES = 16 * 1024 * 1024;
/** Most entries kept of one source. */
export const MAX_CATALOGUE_ENTRIES = 5000;
export const MAX_NAME_CHARS = 120;
export const MAX_DESCRIPTION_CHARS = 500;
/** A context length beyond this is not believed. */
const MAX_CONTEXT_LENGTH = 100_000_000;
/** A price beyond this (USD per million tokens) is not believed. */
const MAX_PRICE_PER_MILLION = 1_000_000;

/** What went wrong with one fetch; the user-facing text is built from these fields only. */
export type CatalogueFailureKind =
  'timeout' | 'http' | 'network' | 'invalid-response' | 'too-large' | 'config';

export class CatalogueFetchError extends Error {
  constructor(
    /** For logs: may name hosts, never credentials. */
    message: string,
    readonly kind: CatalogueFailureKind,
    readonly status?: number,
    readonly code?: NetworkErrorCode,
  ) {
    super(message);
    this.name = 'CatalogueFetchError';
  }
}

const SOURCE_LABELS: Record<RemoteSource, string> = {
  openrouter: 'the OpenRouter model list',
  'openai-compatible': "the OpenAI-compatible server's model list",
};

/**
 * What users are told about a failed fetch, e.g. "Could not fetch the OpenRouter model list:
 * HTTP 401 (the key was refused)": the source and the failure kind from closed lists, never a
 * host, URL, key or any text of the server's (as userFacingCallError does for model calls).
 */
export function userFacingCatalogueError(source: RemoteSource, error: unknown): string {
  const what = `Could not fetch ${SOURCE_LABELS[source]}`;
  if (!(error instanceof CatalogueFetchError)) return `${what}: unexpected error`;
  switch (error.kind) {
    case 'timeout':
      return `${what}: timed out`;
    case 'http': {
      const status =
        Number.isInteger(error.status) && error.status! >= 100 && error.status! <= 599
          ? `HTTP ${error.status}`
          : 'HTTP error';
      const hint =
        error.status === 401 || error.status === 403
          ? ' (the key was refused)'
          : error.status === 404
            ? ' (no model list at the configured address)'
            : '';
      return `${what}: ${status}${hint}`;
    }
    case 'network':
      return `${what}: network error${error.code ? ` (${NETWORK_REASONS[error.code]})` : ''}`;
    case 'invalid-response':
      return `${what}: the answer was not a model list`;
    case 'too-large':
      return `${what}: the answer was too large`;
    case 'config':
      return `${what}: the configured base URL is not valid`;
  }
}

/** One remote list. `fetch` throws CatalogueFetchError; it must stop when `signal` aborts. */
export interface CatalogueSource {
  readonly provider: RemoteSource;
  fetch(signal: AbortSignal): Promise<ModelEntry[]>;
}

// ---------------------------------------------------------------------------------------------
// Parsing (exported for tests)

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Control, format and bidirectional characters: never shown, never passed on. */
// eslint-disable-next-line no-control-regex
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

const TAG = /<\/?[a-z!?][^<>]*>/gi;

/**
 * Plain text from an untrusted string: markup tags removed, invisible characters dropped,
 * whitespace collapsed, at most `max` characters (an ellipsis marks a cut). Undefined when
 * nothing is left.
 */
export function plainText(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  // Long input is cut first so the clean-up below never works on megabytes.
  let text = value.slice(0, max * 4);
  // Tags go (again until none is left: `<scr<b>ipt>`), then any angle bracket that remains.
  for (let i = 0; i < 5; i++) {
    const next = text.replace(TAG, ' ');
    if (next === text) break;
    text = next;
  }
  text = text.replace(/[<>]/g, '').replace(INVISIBLE, ' ').replace(/\s+/g, ' ').trim();
  if (text === '') return undefined;
  if (text.length > max) {
    text = text.slice(0, max - 1);
    // Never leave half of a surrogate pair.
    if (/[\ud800-\udbff]$/.test(text)) text = text.slice(0, -1);
    text = `${text.trimEnd()}…`;
  }
  return text;
}

/**
 * USD per token, as OpenRouter writes it ("0.0000025"), to USD per million tokens (2.5); undefined
 * for anything not a non-negative price (OpenRouter's "-1" means "varies", as for its auto router).
 */
export function perMillionUsd(perToken: unknown): number | undefined {
  if (typeof perToken !== 'string' && typeof perToken !== 'number') return undefined;
  if (typeof perToken === 'string' && (perToken.trim() === '' || perToken.length > 40)) return undefined;
  const value = Number(perToken);
  if (!Number.isFinite(value) || value < 0) return undefined;
  // toPrecision drops the binary noise of the multiplication (0.0000025 × 1e6 = 2.4999999999999996).
  const perMillion = Number((value * 1_000_000).toPrecision(12));
  return perMillion <= MAX_PRICE_PER_MILLION ? perMillion : undefined;
}

function contextLengthOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= MAX_CONTEXT_LENGTH ? n : undefined;
}

function pricingOf(value: unknown): ModelPricing | undefined {
  if (!isRecord(value)) return undefined;
  const prompt = perMillionUsd(value.prompt);
  const completion = perMillionUsd(value.completion);
  return prompt === undefined || completion === undefined
    ? undefined
    : { promptPerMillionUsd: prompt, completionPerMillionUsd: completion };
}

/** The `data` array of a `{ data: [...] }` body, or an invalid-response error. */
function dataOf(body: unknown, source: RemoteSource): unknown[] {
  if (!isRecord(body) || !Array.isArray(body.data)) {
    throw new CatalogueFetchError(`${source} model list: no data array in the answer`, 'invalid-response');
  }
  return body.data;
}

/** Entries in order, each id once, at most MAX_CATALOGUE_ENTRIES. */
function collect(
  items: unknown[],
  toEntry: (item: Record<string, unknown>) => ModelEntry | null,
): ModelEntry[] {
  const entries: ModelEntry[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    if (entries.length >= MAX_CATALOGUE_ENTRIES) break;
    if (!isRecord(item)) continue;
    const entry = toEntry(item);
    if (!entry || seen.has(entry.id)) continue;
    seen.add(entry.id);
    entries.push(entry);
  }
  return entries;
}

/** OpenRouter's `{ data: [{ id, name, context_length, pricing: { prompt, completion }, description }] }`. */
export function parseOpenRouterModels(body: unknown): ModelEntry[] {
  return collect(dataOf(body, 'openrouter'), (item) => {
    const id = item.id;
    // OpenRouter ids are what a roster names: one that a roster would refuse is left out.
    if (!isModelId(id)) return null;
    const entry: ModelEntry = {
      id,
      provider: 'openrouter',
      name: plainText(item.name, MAX_NAME_CHARS) ?? id,
    };
    const contextLength = contextLengthOf(item.context_length);
    if (contextLength !== undefined) entry.contextLength = contextLength;
    const pricing = pricingOf(item.pricing);
    if (pricing) entry.pricing = pricing;
    const description = plainText(item.description, MAX_DESCRIPTION_CHARS);
    if (description) entry.description = description;
    return entry;
  });
}

/**
 * An OpenAI-compatible `{ data: [{ id, owned_by }] }`. Rosters name these `<prefix>/<id>`
 * (the provider sends them without the prefix), so that is the entry's id.
 */
export function parseOpenAiModels(body: unknown, prefix: string): ModelEntry[] {
  return collect(dataOf(body, 'openai-compatible'), (item) => {
    if (typeof item.id !== 'string' || item.id === '') return null;
    const id = `${prefix}/${item.id}`;
    if (!isModelId(id)) return null;
    const entry: ModelEntry = {
      id,
      provider: 'openai-compatible',
      name: plainText(item.id, MAX_NAME_CHARS) ?? id,
    };
    const owner = plainText(item.owned_by, 60);
    if (owner) entry.description = `Served by the OpenAI-compatible server (owned by ${owner}).`;
    const contextLength = contextLengthOf(item.context_length ?? item.max_model_len);
    if (contextLength !== undefined) entry.contextLength = contextLength;
    return entry;
  });
}

// ---------------------------------------------------------------------------------------------
// Fetching

/** The body as JSON, reading at most `maxBytes` (too-large beyond); invalid-response if not JSON. */
export async function readJsonBounded(
  response: Response,
  source: RemoteSource,
  maxBytes = MAX_CATALOGUE_BYTES,
): Promise<unknown> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new CatalogueFetchError(`${source} model list: ${declared} bytes announced`, 'too-large');
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new CatalogueFetchError(`${source} model list: more than ${maxBytes} bytes`, 'too-large');
      }
      chunks.push(value);
    }
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CatalogueFetchError(`${source} model list: the answer is not JSON`, 'invalid-response');
  }
}

/** Anything a fetch threw, as a CatalogueFetchError whose message holds no credential. */
function fetchFailure(error: unknown, source: RemoteSource, secrets: readonly string[]): CatalogueFetchError {
  if (error instanceof CatalogueFetchError) return error;
  const redact = (text: string): string => {
    let out = text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi, '$1[redacted]@');
    for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join('***');
    return out.slice(0, 300);
  };
  if (error instanceof APIConnectionTimeoutError) {
    return new CatalogueFetchError(`${source} model list: timed out`, 'timeout');
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    return new CatalogueFetchError(
      `${source} model list: HTTP ${error.status}: ${redact(error.message)}`,
      'http',
      error.status,
    );
  }
  const code = networkErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  const cause =
    error instanceof APIConnectionError && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return new CatalogueFetchError(
    `${source} model list: ${redact(message + cause)}${code ? ` (${code})` : ''}`,
    'network',
    undefined,
    code,
  );
}

/** A base URL without its user and password, and those as a Basic `Authorization` value (null without). */
export function splitUrlCredentials(baseUrl: string): {
  url: URL;
  basicAuth: string | null;
  password: string | null;
} {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new CatalogueFetchError('model list: the base URL does not parse', 'config');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CatalogueFetchError('model list: the base URL is not http(s)', 'config');
  }
  return withoutCredentials(url);
}

/** `{base}/models`, the base's path kept (`https://openrouter.ai/api/v1` → `…/api/v1/models`). */
function modelsUrl(base: URL): string {
  const url = new URL(base.toString());
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/models`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

/** OpenRouter's catalogue: `GET {baseUrl}/models` with the key as a bearer token. */
export class OpenRouterCatalogueSource implements CatalogueSource {
  readonly provider = 'openrouter' as const;

  constructor(private readonly options: { baseUrl: string; apiKey: string }) {}

  async fetch(signal: AbortSignal): Promise<ModelEntry[]> {
    const secrets = [this.options.apiKey];
    try {
      const { url, basicAuth, password } = splitUrlCredentials(this.options.baseUrl);
      if (password) secrets.push(password, encodeURIComponent(password));
      const response = await fetch(modelsUrl(url), {
        headers: {
          accept: 'application/json',
          authorization: basicAuth ?? `Bearer ${this.options.apiKey}`,
        },
        signal,
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw new CatalogueFetchError(
          `openrouter model list: HTTP ${response.status}`,
          'http',
          response.status,
        );
      }
      return parseOpenRouterModels(await readJsonBounded(response, this.provider));
    } catch (error) {
      throw fetchFailure(error, this.provider, secrets);
    }
  }
}

/** An OpenAI-compatible server's own list, through the official SDK's `models.list()`. */
export class OpenAiCompatibleCatalogueSource implements CatalogueSource {
  readonly provider = 'openai-compatible' as const;

  constructor(
    private readonly options: { baseUrl: string; apiKey: string; modelPrefix: string; timeoutMs: number },
  ) {}

  async fetch(signal: AbortSignal): Promise<ModelEntry[]> {
    const secrets = [this.options.apiKey];
    try {
      const { url, basicAuth, password } = splitUrlCredentials(this.options.baseUrl);
      if (password) secrets.push(password, encodeURIComponent(password));
      const client = new OpenAI({
        baseURL: url.toString().replace(/\/+$/, ''),
        apiKey: this.options.apiKey,
        maxRetries: 0,
        timeout: this.options.timeoutMs,
        // Fetch refuses URLs with credentials: they travel as Basic authentication instead of the key.
        ...(basicAuth ? { defaultHeaders: { Authorization: basicAuth } } : {}),
      });
      // The raw response, so the body is read within MAX_CATALOGUE_BYTES (the SDK would read it whole).
      const response = await client.models.list({ signal }).asResponse();
      return parseOpenAiModels(await readJsonBounded(response, this.provider), this.options.modelPrefix);
    } catch (error) {
      throw fetchFailure(error, this.provider, secrets);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Caching

export interface ModelCatalogueOptions {
  sources: CatalogueSource[];
  /** A good list is served this long, then fetched again (the stale list is served meanwhile). */
  refreshMs: number;
  /** After a failed fetch, the next is tried no sooner than this; default min(refreshMs, 60 s). */
  retryMs?: number;
  /** One fetch, body included, may take this long. */
  timeoutMs: number;
  now?: () => number;
  /** Each failed fetch, for the operator's log (the error's message names no credential). */
  onError?: (source: RemoteSource, error: CatalogueFetchError) => void;
}

export interface SourceSnapshot {
  provider: RemoteSource;
  entries: ModelEntry[];
  /** Of the last good list (ms since the epoch), null before one. */
  fetchedAt: number | null;
  /** User-facing; null when the last fetch succeeded (or none finished yet). */
  error: string | null;
}

interface SourceState {
  source: CatalogueSource;
  entries: ModelEntry[];
  fetchedAt: number | null;
  /** When the last fetch (good or not) ended. */
  attemptedAt: number | null;
  error: string | null;
  inflight: Promise<void> | null;
  controller: AbortController | null;
}

/**
 * The cached lists of remote sources. A list is fetched when first asked for (callers wait, up to
 * `timeoutMs`), and again when asked for once `refreshMs` old (callers get the stale list at once
 * and the next caller the new one). Concurrent callers share one fetch per source. A failed fetch
 * keeps the last good list and records a user-safe error; it is retried after `retryMs`.
 */
export class ModelCatalogue {
  private readonly states: SourceState[];
  private readonly now: () => number;
  private readonly retryMs: number;
  private closed = false;

  constructor(private readonly options: ModelCatalogueOptions) {
    this.now = options.now ?? Date.now;
    this.retryMs = options.retryMs ?? Math.min(options.refreshMs, 60_000);
    this.states = options.sources.map((source) => ({
      source,
      entries: [],
      fetchedAt: null,
      attemptedAt: null,
      error: null,
      inflight: null,
      controller: null,
    }));
  }

  /** Every source's list, fetching what is missing or due. Never throws. */
  async snapshot(): Promise<SourceSnapshot[]> {
    await Promise.all(
      this.states.map(async (state) => {
        const pending = this.due(state) ? this.refresh(state) : state.inflight;
        // Without a good list there is nothing to serve meanwhile: wait for the fetch.
        if (pending && state.fetchedAt === null) await pending;
      }),
    );
    return this.states.map((s) => ({
      provider: s.source.provider,
      entries: s.entries,
      fetchedAt: s.fetchedAt,
      error: s.error,
    }));
  }

  /** Stops fetches in flight; later snapshots serve what is cached. */
  close(): void {
    this.closed = true;
    for (const state of this.states) state.controller?.abort();
  }

  private due(state: SourceState): boolean {
    if (this.closed || state.inflight) return false;
    if (state.attemptedAt === null) return true;
    const age = this.now() - state.attemptedAt;
    return state.error === null ? age >= this.options.refreshMs : age >= this.retryMs;
  }

  /** One fetch of one source; concurrent callers share it (single flight). */
  private refresh(state: SourceState): Promise<void> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.options.timeoutMs);
    state.controller = controller;
    state.inflight = state.source
      .fetch(controller.signal)
      .then(
        (entries) => {
          state.entries = entries.slice(0, MAX_CATALOGUE_ENTRIES);
          state.fetchedAt = this.now();
          state.error = null;
        },
        (error: unknown) => {
          // Stopped by close(): nothing went wrong with the source.
          if (this.closed && !timedOut) return;
          const failure = timedOut
            ? new CatalogueFetchError(
                `${state.source.provider} model list: no answer within the timeout`,
                'timeout',
              )
            : error instanceof CatalogueFetchError
              ? error
              : new CatalogueFetchError(`${state.source.provider} model list: ${String(error)}`, 'network');
          state.error = userFacingCatalogueError(state.source.provider, failure);
          this.options.onError?.(state.source.provider, failure);
        },
      )
      .finally(() => {
        clearTimeout(timer);
        state.attemptedAt = this.now();
        state.inflight = null;
        state.controller = null;
      });
    return state.inflight;
  }
}

// ---------------------------------------------------------------------------------------------
// The whole answer of GET /api/models

/** The catalogue settings (ConclaveConfig.modelCatalogue has this shape). */
export interface ModelCatalogueSettings {
  openrouter: { apiKey: string; baseUrl: string } | null;
  openaiCompatible: { baseUrl: string; apiKey: string; modelPrefix: string } | null;
  refreshMs: number;
  timeoutMs: number;
}

const OPENAI_COMPATIBLE_UNUSED =
  'Not used: with an OpenRouter key set, OpenRouter serves every model id that does not start with sim/.';
const SIMULATED_ONLY =
  'No real provider is configured: every model id, not only sim/…, is answered by the simulator.';

/**
 * GET /api/models for one gateway: the simulated panel (with `simulatedIds`, e.g. the sim ids of
 * the default rosters), OpenRouter's catalogue when a key is set, otherwise the OpenAI-compatible
 * server's list when a base URL is set, as the worker's provider routes ids.
 */
export class ModelDirectory {
  private readonly catalogue: ModelCatalogue;
  private readonly simulated: ModelEntry[];

  constructor(
    private readonly settings: ModelCatalogueSettings,
    options: {
      simulatedIds?: readonly string[];
      now?: () => number;
      onError?: ModelCatalogueOptions['onError'];
      retryMs?: number;
    } = {},
  ) {
    this.simulated = simulatedPanel(options.simulatedIds);
    const sources: CatalogueSource[] = [];
    if (settings.openrouter) sources.push(new OpenRouterCatalogueSource(settings.openrouter));
    else if (settings.openaiCompatible) {
      sources.push(
        new OpenAiCompatibleCatalogueSource({ ...settings.openaiCompatible, timeoutMs: settings.timeoutMs }),
      );
    }
    this.catalogue = new ModelCatalogue({
      sources,
      refreshMs: settings.refreshMs,
      timeoutMs: settings.timeoutMs,
      retryMs: options.retryMs,
      now: options.now,
      onError: options.onError,
    });
  }

  async list(): Promise<ModelsResponse> {
    const remote = await this.catalogue.snapshot();
    const find = (provider: RemoteSource) => remote.find((s) => s.provider === provider);
    const status = (provider: RemoteSource, configured: boolean, note?: string): ModelSourceStatus => {
      const snapshot = find(provider);
      return {
        provider,
        configured,
        fetchedAt:
          typeof snapshot?.fetchedAt === 'number' ? new Date(snapshot.fetchedAt).toISOString() : null,
        count: snapshot?.entries.length ?? 0,
        error: snapshot?.error ?? null,
        ...(note ? { note } : {}),
      };
    };
    const realConfigured = Boolean(this.settings.openrouter || this.settings.openaiCompatible);
    return {
      models: [...this.simulated, ...remote.flatMap((s) => s.entries)],
      sources: [
        {
          provider: 'simulated',
          configured: true,
          fetchedAt: null,
          count: this.simulated.length,
          error: null,
          ...(realConfigured ? {} : { note: SIMULATED_ONLY }),
        },
        status('openrouter', this.settings.openrouter !== null),
        status(
          'openai-compatible',
          this.settings.openaiCompatible !== null,
          this.settings.openrouter && this.settings.openaiCompatible ? OPENAI_COMPATIBLE_UNUSED : undefined,
        ),
      ],
      directives: SIM_DIRECTIVES.map((d) => ({ ...d })),
      promptKinds: [...SIM_PROMPT_KINDS],
    };
  }

  close(): void {
    this.catalogue.close();
  }
}

import type {
  AckError,
  ApiErrorBody,
  ClientToServerEvents,
  DeliberateRequest,
  DeliberationAccepted,
  DeliberationView,
  DeliveredEvent,
  LiveEvent,
  ModeDescription,
  ModelsResponse,
  ServerToClientEvents,
} from '@conclave/contracts';
import { io, type Socket } from 'socket.io-client';

const KEY_STORAGE = 'conclave.apiKey';

export const apiKey = {
  get: (): string => localStorage.getItem(KEY_STORAGE) ?? '',
  set: (key: string) => localStorage.setItem(KEY_STORAGE, key),
};

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
    /** When to try again (HTTP's Retry-After, a socket ack's `retryAfterSeconds`): every 429 and 503 says. */
    readonly retryAfterSeconds?: number,
  ) {
    super(body.message);
  }
}

/** How long to wait before trying again when the server gave no usable time. */
const DEFAULT_RETRY_SECONDS = 5;

/**
 * Seconds to wait before trying again when the server is only away for a moment (503: storage or
 * the job queue unavailable, nothing was done), else null: the failure is an answer to show.
 */
export function retryDelayOf(error: unknown): number | null {
  if (!(error instanceof ApiFailure) || error.status !== 503) return null;
  const seconds = error.retryAfterSeconds;
  return seconds !== undefined && Number.isFinite(seconds) && seconds > 0
    ? Math.min(seconds, 60)
    : DEFAULT_RETRY_SECONDS;
}

/** What the web client says while it waits to try again. */
export const retryingNote = (seconds: number): string =>
  `The server is temporarily unavailable; retrying in ${seconds} s…`;

/**
 * Runs `attempt` until it succeeds or fails for good; while the server is temporarily unavailable
 * (503) it tells `onWait` how long until the next try, waits that long and tries again, at most
 * `tries` times in all. `stopped()` ends the waiting (the view went away): the last failure is thrown.
 */
export async function retryWhileUnavailable<T>(
  attempt: () => Promise<T>,
  onWait: (seconds: number) => void,
  options: { tries?: number; stopped?: () => boolean } = {},
): Promise<T> {
  const tries = options.tries ?? 12;
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      const delay = retryDelayOf(error);
      if (delay === null || i >= tries || options.stopped?.()) throw error;
      onWait(delay);
      await new Promise((resolve) => setTimeout(resolve, delay * 1000));
      if (options.stopped?.()) throw error;
    }
  }
}

/** An ack's refusal (the status, message, fields and retry hint HTTP gives for the same) as the failure HTTP would have thrown. */
export function ackFailure(error: AckError): ApiFailure {
  const status = error.statusCode ?? 400;
  const body: ApiErrorBody = {
    statusCode: status,
    error: status === 503 ? 'Service Unavailable' : 'Error',
    message: error.message,
  };
  if (error.fields) body.fields = error.fields;
  return new ApiFailure(status, body, error.retryAfterSeconds);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const key = apiKey.get();
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const retryAfter = Number(response.headers?.get('retry-after') ?? NaN);
    throw new ApiFailure(
      response.status,
      parsed as ApiErrorBody,
      Number.isFinite(retryAfter) ? retryAfter : undefined,
    );
  }
  return parsed as T;
}

export const getModes = () => api<ModeDescription[]>('GET', '/api/modes');
/** The model picker's list: simulated panel, OpenRouter or OpenAI-compatible models, directives help. */
export const getModels = () => api<ModelsResponse>('GET', '/api/models');
export const getDeliberation = (id: string) => api<DeliberationView>('GET', `/api/deliberations/${id}`);

/** The `/deliberations` namespace, with the contract's events. */
export type DeliberationsSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

let socket: DeliberationsSocket | null = null;

export function connection(): DeliberationsSocket {
  if (!socket) {
    socket = io('/deliberations', { transports: ['websocket'], auth: (cb) => cb({ token: apiKey.get() }) });
  }
  return socket;
}

/**
 * A fresh idempotency key: one per start the user asks for, sent again with each retry of it, so a
 * retry whose first try was started after all (its answer lost, or a 503 that kept the turn) answers
 * that deliberation instead of starting a second. Random (crypto.getRandomValues works over plain
 * HTTP too, where randomUUID does not).
 */
export function newIdempotencyKey(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** Socket.IO `deliberate`; `idempotencyKey` (newIdempotencyKey) makes a retry of it safe. */
export async function startDeliberation(
  request: unknown,
  idempotencyKey?: string,
): Promise<DeliberationAccepted> {
  const payload =
    idempotencyKey === undefined ? request : { ...(request as Record<string, unknown>), idempotencyKey };
  // The form builds the body field by field (new-deliberation); the gateway validates it as HTTP does.
  const ack = await connection().emitWithAck('deliberate', payload as DeliberateRequest);
  if ('error' in ack) throw ackFailure(ack.error);
  return ack;
}

export const cancelDeliberation = (id: string) =>
  api<DeliberationView>('POST', `/api/deliberations/${encodeURIComponent(id)}/cancel`);

export interface FollowHandlers {
  /** Each stored event once, in seq order. */
  onEvent: (event: DeliveredEvent) => void;
  /** Live pieces of the answers being written (`model_delta`, `model_partial`); never stored. */
  onLive: (event: LiveEvent) => void;
  /** Seconds until the subscription is asked for again while the server is briefly away; null once it is taken. */
  onUnavailable?: (retryInSeconds: number | null) => void;
}

const isLive = (name: string): boolean => name === 'model_delta' || name === 'model_partial';

/**
 * Every event of a message from the first: the server replays what is stored, then live ones, so
 * a reload or a reconnect rebuilds the same timeline with nothing missing or doubled. With them,
 * the answers being written: after (re)subscribing, each call's answer so far (`model_partial`),
 * then its pieces as they come (`model_delta`).
 */
export function follow(messageId: string, handlers: FollowHandlers): () => void {
  const s = connection();
  let last = 0;
  const handler = (name: string, event: DeliveredEvent | LiveEvent) => {
    if (event?.messageId !== messageId) return;
    if (isLive(name)) return handlers.onLive(event as LiveEvent);
    const stored = event as DeliveredEvent;
    if (typeof stored.seq !== 'number' || stored.seq <= last) return;
    last = stored.seq;
    handlers.onEvent(stored);
  };
  let retry: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  // Refused while the server is briefly away (503): asked again once its retry hint has passed.
  const subscribe = () => {
    clearTimeout(retry);
    void s.emitWithAck('subscribe', { messageId, afterSeq: last, deltas: true }).then((ack) => {
      const refused = ack && 'error' in ack ? ack.error : undefined;
      const delay = refused ? retryDelayOf(ackFailure(refused)) : null;
      handlers.onUnavailable?.(delay);
      if (delay !== null && !ended) retry = setTimeout(subscribe, delay * 1000);
    });
  };
  s.onAny(handler);
  s.on('connect', subscribe);
  if (s.connected) subscribe();
  return () => {
    ended = true;
    clearTimeout(retry);
    s.offAny(handler);
    s.off('connect', subscribe);
    void s.emitWithAck('unsubscribe', { messageId });
  };
}

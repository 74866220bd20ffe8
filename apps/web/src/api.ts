import type {
  ApiErrorBody,
  DeliberationAccepted,
  DeliberationView,
  DeliveredEvent,
  LiveEvent,
  ModeDescription,
  ModelsResponse,
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
  ) {
    super(body.message);
  }
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
  if (!response.ok) throw new ApiFailure(response.status, parsed as ApiErrorBody);
  return parsed as T;
}

export const getModes = () => api<ModeDescription[]>('GET', '/api/modes');
/** The model picker's list: simulated panel, OpenRouter or OpenAI-compatible models, directives help. */
export const getModels = () => api<ModelsResponse>('GET', '/api/models');
export const getDeliberation = (id: string) => api<DeliberationView>('GET', `/api/deliberations/${id}`);

let socket: Socket | null = null;

export function connection(): Socket {
  if (!socket) {
    socket = io('/deliberations', { transports: ['websocket'], auth: (cb) => cb({ token: apiKey.get() }) });
  }
  return socket;
}

export async function startDeliberation(request: unknown): Promise<DeliberationAccepted> {
  const ack = (await connection().emitWithAck('deliberate', request)) as
    DeliberationAccepted | { error: { message: string; fields?: Record<string, string> } };
  if ('error' in ack) throw new ApiFailure(400, { statusCode: 400, error: 'Bad Request', ...ack.error });
  return ack;
}

export const cancelDeliberation = (id: string) =>
  api<DeliberationView>('POST', `/api/deliberations/${encodeURIComponent(id)}/cancel`);

export interface FollowHandlers {
  /** Each stored event once, in seq order. */
  onEvent: (event: DeliveredEvent) => void;
  /** Live pieces of the answers being written (`model_delta`, `model_partial`); never stored. */
  onLive: (event: LiveEvent) => void;
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
  const subscribe = () => void s.emitWithAck('subscribe', { messageId, afterSeq: last, deltas: true });
  s.onAny(handler);
  s.on('connect', subscribe);
  if (s.connected) subscribe();
  return () => {
    s.offAny(handler);
    s.off('connect', subscribe);
    void s.emitWithAck('unsubscribe', { messageId });
  };
}

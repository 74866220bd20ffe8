import type {
  ApiErrorBody,
  DeliberationAccepted,
  DeliberationView,
  DeliveredEvent,
  ModeDescription,
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

/**
 * Every event of a message from the first: the server replays what is stored, then live ones, so
 * a reload or a reconnect rebuilds the same timeline with nothing missing or doubled.
 */
export function follow(messageId: string, onEvent: (event: DeliveredEvent) => void): () => void {
  const s = connection();
  let last = 0;
  const handler = (_name: string, event: DeliveredEvent) => {
    if (event?.messageId !== messageId || event.seq <= last) return;
    last = event.seq;
    onEvent(event);
  };
  const subscribe = () => void s.emitWithAck('subscribe', { messageId, afterSeq: last });
  s.onAny(handler);
  s.on('connect', subscribe);
  if (s.connected) subscribe();
  return () => {
    s.offAny(handler);
    s.off('connect', subscribe);
    void s.emitWithAck('unsubscribe', { messageId });
  };
}

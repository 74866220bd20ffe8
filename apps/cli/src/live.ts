import type {
  Ack,
  AckRefusal,
  ClientEvent,
  ClientToServerEvents,
  ServerToClientEvents,
  SocketAck,
  SocketRequest,
} from '@conclave/contracts';
import { io, type Socket } from 'socket.io-client';
import type { Target } from './args';
import { CliError, keyRefused, unreachable } from './errors';

const CONNECT_TIMEOUT_MS = 10_000;
const ACK_TIMEOUT_MS = 15_000;
const RECONNECT_ATTEMPTS = 10;

/** A socket of the `/deliberations` namespace, with the contract's events. */
export type LiveSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

/** What a client event sends. */
type RequestOf<Ev extends ClientEvent> = SocketRequest<Ev>;
/** What its ack answers when the server did not refuse it. */
type AnswerOf<Ev extends ClientEvent> = Exclude<SocketAck<Ev>, AckRefusal>;

interface AckEmitter<Ev extends ClientEvent> {
  emitWithAck(event: Ev, payload: RequestOf<Ev>): Promise<Ack<AnswerOf<Ev>>>;
}

export interface LiveHandlers {
  /** Called after the connection came back, to subscribe again. */
  onReconnect: () => void;
  /** Called when the connection is gone for good. */
  onLost: (error: CliError) => void;
  /** Shows a notice line ("connection lost, reconnecting…"); stderr by default. */
  onNotice?: (line: string) => void;
}

/** A promise settled from outside; a rejection before anyone awaits it is not "unhandled". */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function connectFailure(error: Error & { type?: string }, target: Target): CliError {
  if (error.message.startsWith('unauthorized')) return keyRefused(target.key);
  if (error.type === 'TransportError' || error.message === 'timeout') return unreachable(target.url);
  return new CliError(error.message);
}

/** Connects to the `/deliberations` namespace; once connected, reconnects by itself. */
export async function openLive(target: Target, handlers: LiveHandlers): Promise<LiveSocket> {
  const base = new URL(target.url);
  const socket: LiveSocket = io(`${base.origin}/deliberations`, {
    path: `${base.pathname.replace(/\/+$/, '')}/socket.io`,
    transports: ['websocket'],
    auth: target.key ? { token: target.key } : {},
    reconnection: false,
    timeout: CONNECT_TIMEOUT_MS,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (error: Error) => {
      socket.close();
      reject(connectFailure(error, target));
    });
  });
  socket.io.reconnection(true);
  socket.io.reconnectionAttempts(RECONNECT_ATTEMPTS);
  const notice = handlers.onNotice ?? ((line: string) => process.stderr.write(`${line}\n`));
  socket.on('disconnect', (reason) => {
    if (reason === 'io server disconnect') handlers.onLost(new CliError('the server closed the connection'));
    else if (reason !== 'io client disconnect') notice('connection lost, reconnecting…');
  });
  socket.on('connect', () => handlers.onReconnect());
  socket.io.on('reconnect_failed', () => handlers.onLost(unreachable(target.url)));
  return socket;
}

/** Emits with an acknowledgement; an `{ error }` answer becomes a `CliError`. */
export async function call<Ev extends ClientEvent>(
  socket: LiveSocket,
  event: Ev,
  payload: RequestOf<Ev>,
): Promise<AnswerOf<Ev>> {
  let ack: Ack<AnswerOf<Ev>>;
  try {
    // TypeScript does not follow a generic `Ev` through Socket.IO's ack types: the one event's view.
    const timed = socket.timeout(ACK_TIMEOUT_MS) as AckEmitter<Ev>;
    ack = await timed.emitWithAck(event, payload);
  } catch {
    throw new CliError(`the server did not answer "${event}"`);
  }
  if ('error' in ack) throw new CliError(ack.error.message, ack.error.fields);
  return ack;
}

import { Inject, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import type { Metrics } from '@conclave/observability';
import { CONFIG, METRICS } from '@conclave/platform';
import {
  ConnectedSocket,
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
  type OnGatewayDisconnect,
  type OnGatewayInit,
} from '@nestjs/websockets';
import type {
  Ack,
  AckError,
  AckRefusal,
  ClientToServerEvents,
  ServerToClientEvents,
  SocketAck,
} from '@conclave/contracts';
import type { DefaultEventsMap, ExtendedError, Namespace, Socket as IoSocket } from 'socket.io';
import { ApiError } from '../common/api-error';
import { errorAnswerOf } from '../common/error-answer';
import { IDEMPOTENCY_KEY_RULE, isIdempotencyKey } from '../common/idempotency';
import { RateLimiter } from '../common/rate-limiter';
import { AuthService, type Identity } from '../auth/auth.service';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { CancelService } from '../deliberations/cancel.service';
import { EventHub } from './event-hub';
import { LiveHub } from './live-hub';
import { BatchHub } from '../batches/batch-hub';
import { BatchesService } from '../batches/batches.service';
import type { OrderedDelivery } from './ordered-delivery';
import { outflowLimits, type Outflow } from './outflow';
import { drainingOutflow } from './sse';
import { sendHeldWrites } from './turn-writes';
import { StreamRegistry, type CloseReason, type LiveStream } from './stream-registry';

interface SocketState {
  userId: string;
  keyId: string | null;
  stream: LiveStream;
  outflow: Outflow;
  subscriptions: Map<string, OrderedDelivery>;
  batches: Map<string, () => void>;
}

/** A socket of the namespace: the contract's events; `data` is its state once the handshake admitted it. */
type Socket = IoSocket<ClientToServerEvents, ServerToClientEvents, DefaultEventsMap, Partial<SocketState>>;
type DeliberationsNamespace = Namespace<
  ClientToServerEvents,
  ServerToClientEvents,
  DefaultEventsMap,
  Partial<SocketState>
>;

const stateOf = (socket: Socket): SocketState => socket.data as SocketState;

const ackLogger = new Logger('socket');

/**
 * An error as an ack: the status, message and retry hint HTTP answers it with (errorAnswerOf, one
 * rule for every transport).
 */
function errorAck(error: unknown, event = 'message'): AckRefusal {
  const { body, retryAfterSeconds, kind } = errorAnswerOf(error);
  if (kind === 'storage') {
    ackLogger.warn(`${event}: storage unavailable (${String((error as Error)?.message)})`);
  } else if (kind === 'unexpected') {
    // The stack only at debug: error-level lines stay free of internals.
    ackLogger.error(`${event}: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof Error && error.stack) ackLogger.debug(error.stack);
  }
  const ack: AckError = { statusCode: body.statusCode, message: body.message };
  if (body.fields) ack.fields = body.fields;
  if (retryAfterSeconds !== undefined) ack.retryAfterSeconds = retryAfterSeconds;
  return { error: ack };
}

/** A refusal of the gateway's own, with its status. */
const refusal = (status: number, message: string, fields?: Record<string, string>): AckRefusal =>
  errorAck(new ApiError(status, message, fields));

/** A subscription the gateway closed (shutting down) or a socket already gone: come back (503). */
const gone = (message: string) => refusal(503, message);

/** A refused handshake: the client's `connect_error` carries the message, and `data` the status. */
function handshakeError(message: string, data?: { statusCode: number; retryAfterSeconds?: number }) {
  const error: ExtendedError = new Error(message);
  if (data) error.data = data;
  return error;
}

/** A handshake refused for an error: its message, and in `data` its status and retry hint, as an ack has them. */
function handshakeRefusal(cause: unknown) {
  const { message, ...data } = errorAck(cause, 'handshake').error;
  delete data.fields;
  return handshakeError(message, data);
}

/** A refused payload, as HTTP's 400 names its fields. */
function invalidAck(fields: Record<string, string>): AckRefusal {
  return errorAck(ApiError.invalid(fields));
}

/**
 * An event's payload as an object of the fields it may carry, or the ack refusing it: validated
 * like an HTTP body (an object, no unknown field; each field's type is checked by the handler).
 * No payload at all counts as `{}`, so a missing field is named.
 */
function payloadOf<K extends string>(
  body: unknown,
  known: readonly K[],
): { fields: Partial<Record<K, unknown>> } | AckRefusal {
  if (body === undefined || body === null) return { fields: {} };
  if (typeof body !== 'object' || Array.isArray(body)) {
    return invalidAck({ payload: `must be an object with ${known.join(', ')}` });
  }
  const unknown = Object.keys(body).filter((name) => !(known as readonly string[]).includes(name));
  if (unknown.length > 0) {
    return invalidAck(
      Object.fromEntries(
        unknown.map((name) => [name.slice(0, 100), `property ${name.slice(0, 100)} should not exist`]),
      ),
    );
  }
  return { fields: body as Partial<Record<K, unknown>> };
}

/** Bytes written to a socket that its client has not taken yet: engine.io's queue and the WebSocket's. */
/** One of the user's subscription places (MAX_SUBSCRIPTIONS_PER_USER), or the ack refusing it. */
function takePlace(state: SocketState): { giveBack: () => void } | AckRefusal {
  if (state.stream.isReleased) return gone('the socket is closed');
  try {
    return { giveBack: state.stream.subscribe() };
  } catch (error) {
    return errorAck(error);
  }
}

/**
 * What a socket's client has not read yet. Frames held for the turn's one write (turn-writes)
 * count too; past `highWaterBytes` they are sent first and the rest measured, so a turn's batch
 * never counts as a client that does not read.
 */
function socketBuffered(socket: Socket, highWaterBytes: number): number {
  const bytes = unreadBytes(socket);
  return bytes > highWaterBytes && sendHeldWrites(socket.conn) ? unreadBytes(socket) : bytes;
}

function unreadBytes(socket: Socket): number {
  const conn = socket.conn as unknown as {
    writeBuffer?: { data?: unknown }[];
    transport?: { socket?: { bufferedAmount?: unknown } };
  };
  let bytes = 0;
  for (const packet of conn.writeBuffer ?? []) {
    if (typeof packet.data === 'string' || Buffer.isBuffer(packet.data)) bytes += packet.data.length;
  }
  const amount = conn.transport?.socket?.bufferedAmount;
  return typeof amount === 'number' ? bytes + amount : bytes;
}

/** Drops a socket's connection without waiting for its client to read what is queued. */
function dropConnection(socket: Socket): void {
  const transport = socket.conn.transport as unknown as { socket?: { terminate?: unknown } };
  socket.conn.close(true);
  const ws = transport.socket;
  if (ws && typeof ws.terminate === 'function') (ws.terminate as () => void).call(ws);
}

/** The Socket.IO protocol of 00-shared.md §4, namespace `/deliberations`. */
// CORS and the origin check are set for the whole server by OriginCheckedIoAdapter.
@WebSocketGateway({ namespace: '/deliberations' })
export class DeliberationsGateway
  implements OnGatewayInit<DeliberationsNamespace>, OnGatewayDisconnect<Socket>
{
  private readonly logger = new Logger('socket');

  constructor(
    private readonly auth: AuthService,
    private readonly deliberations: DeliberationsService,
    private readonly cancels: CancelService,
    private readonly hub: EventHub,
    private readonly live: LiveHub,
    private readonly batches: BatchesService,
    private readonly batchHub: BatchHub,
    private readonly limiter: RateLimiter,
    private readonly streams: StreamRegistry,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  afterInit(namespace: DeliberationsNamespace): void {
    this.metrics.onScrape('conclave_connected_sockets', async () => {
      this.metrics.connectedSockets.set(namespace.sockets.size);
    });
    namespace.use((socket, next) => {
      const auth = socket.handshake.auth as { token?: unknown };
      const token = typeof auth?.token === 'string' ? auth.token : undefined;
      this.admit(socket, token).then(
        () => next(),
        (error: unknown) => next(error instanceof Error ? error : new Error(String(error))),
      );
    });
  }

  /**
   * The handshake: a valid key, one request of the key's budget, and a place among the user's
   * sockets on this replica (MAX_SOCKETS_PER_USER). The socket is registered under its key, so that
   * revoking the key closes it.
   */
  private async admit(socket: Socket, token: string | undefined): Promise<void> {
    // Every attempt, with a key or without, is refused before any lookup once its address has had
    // too many failed ones (AUTH_FAILURES_PER_MINUTE; a no-op in single-user mode).
    const address = this.limiter.clientAddress(socket.request);
    try {
      await this.limiter.assertAuthAllowed(address);
    } catch (error) {
      throw handshakeRefusal(error);
    }
    let identity: Identity | null;
    try {
      identity = await this.auth.identify(token);
    } catch (error) {
      // As HTTP answers it: 503 with a retry hint while storage is away.
      throw handshakeRefusal(error);
    }
    if (!identity) {
      // No key counts as a failure as a wrong one does: anonymous attempts are capped per address.
      await this.limiter.recordAuthFailure(address);
      throw handshakeError('unauthorized: give a valid API key as auth.token', { statusCode: 401 });
    }
    const { userId, keyId } = identity;
    try {
      await this.limiter.take(userId, 'requests');
    } catch (error) {
      throw handshakeRefusal(error);
    }
    if (socket.conn.readyState !== 'open') throw handshakeError('the client went away');
    let stream: LiveStream;
    try {
      stream = this.streams.open('socket', userId, keyId, (reason, detail) =>
        this.closeSocket(socket, reason, detail),
      );
    } catch (error) {
      throw handshakeRefusal(error);
    }
    const limits = outflowLimits(this.config.streams);
    const outflow = drainingOutflow(
      () => socketBuffered(socket, limits.highWaterBytes),
      () => socket.conn.transport,
      limits,
      (detail) => stream.close('slow', detail),
    );
    const state: SocketState = {
      userId,
      keyId,
      stream,
      outflow,
      subscriptions: new Map(),
      batches: new Map(),
    };
    socket.data = state;
    // Also when the client goes before the socket is connected (no disconnect event then).
    socket.conn.once('close', () => this.release(state));
    socket.use((packet, proceed) => this.recheck(socket, token, state, packet, proceed));
  }

  /**
   * Every message counts against the key's request budget, as an HTTP request does, and re-checks
   * the key: one revoked while its socket is open stops working there too.
   */
  private recheck(
    socket: Socket,
    token: string | undefined,
    state: SocketState,
    packet: unknown[],
    proceed: (error?: Error) => void,
  ): void {
    const refuse = (error: AckRefusal) => {
      const ack = packet.at(-1);
      if (typeof ack === 'function') ack(error);
    };
    const check = async () => {
      try {
        await this.limiter.take(state.userId, 'requests');
      } catch (error) {
        return refuse(errorAck(error));
      }
      let current: Identity | null;
      try {
        current = await this.auth.identify(token);
      } catch (error) {
        // As HTTP answers it: 503 with a retry hint while storage is away.
        return refuse(errorAck(error, 'auth'));
      }
      if (current?.userId === state.userId && current.keyId === state.keyId) return proceed();
      refuse(refusal(401, 'unauthorized: the API key is no longer valid'));
      socket.disconnect(true);
    };
    void check();
  }

  private closeSocket(socket: Socket, reason: CloseReason, detail: string): void {
    this.logger.log(`closing a socket (${reason}: ${detail})`);
    socket.disconnect(true);
    // A client that does not read would hold what is queued for it until its ping timeout.
    if (reason === 'slow') dropConnection(socket);
  }

  private release(state: SocketState): void {
    for (const delivery of [...state.subscriptions.values()]) delivery.close();
    for (const stop of [...state.batches.values()]) stop();
    state.batches.clear();
    state.outflow.stop();
    state.stream.release();
  }

  handleDisconnect(socket: Socket): void {
    const state = stateOf(socket);
    if (state?.stream) this.release(state);
  }

  /**
   * The body of POST /api/deliberations, plus an optional `idempotencyKey` (as its Idempotency-Key
   * header: the same key and request answer the deliberation the first one started, so a retry
   * after a lost ack or a 503 never starts a second).
   */
  @SubscribeMessage('deliberate')
  async deliberate(
    @ConnectedSocket() socket: Socket,
    @MessageBody() body: unknown,
  ): Promise<SocketAck<'deliberate'>> {
    try {
      const { userId, keyId } = stateOf(socket);
      let request = body;
      let idempotencyKey: string | undefined;
      if (body && typeof body === 'object' && !Array.isArray(body) && Object.hasOwn(body, 'idempotencyKey')) {
        const { idempotencyKey: key, ...rest } = body as Record<string, unknown>;
        if (!isIdempotencyKey(key)) return invalidAck({ idempotencyKey: IDEMPOTENCY_KEY_RULE });
        [request, idempotencyKey] = [rest, key];
      }
      return await this.deliberations.start(userId, request, idempotencyKey, { apiKeyId: keyId });
    } catch (error) {
      return errorAck(error, 'deliberate');
    }
  }

  @SubscribeMessage('subscribe')
  async subscribe(
    @ConnectedSocket() socket: Socket,
    @MessageBody() body: unknown,
  ): Promise<SocketAck<'subscribe'>> {
    const payload = payloadOf(body, ['messageId', 'afterSeq', 'deltas', 'batchId']);
    if ('error' in payload) return payload;
    const request = payload.fields;
    if (request.batchId !== undefined) {
      // One target per subscription: a batch's, or a deliberation's with its own options.
      const extra = (['messageId', 'afterSeq', 'deltas'] as const).filter(
        (name) => request[name] !== undefined,
      );
      if (extra.length > 0) {
        return invalidAck({
          batchId: `subscribe to a batch or to a deliberation, not both: leave out ${extra.join(', ')}`,
          ...Object.fromEntries(extra.map((name) => [name, 'not allowed with batchId'])),
        });
      }
      return this.subscribeBatch(socket, request.batchId);
    }
    if (typeof request.messageId !== 'string') {
      return refusal(400, 'messageId is required', { messageId: 'must be a string' });
    }
    const afterSeq = request.afterSeq === undefined ? 0 : request.afterSeq;
    if (typeof afterSeq !== 'number' || !Number.isSafeInteger(afterSeq) || afterSeq < 0) {
      return refusal(400, `afterSeq must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`, {
        afterSeq: 'must be a safe integer >= 0',
      });
    }
    if (request.deltas !== undefined && typeof request.deltas !== 'boolean') {
      return refusal(400, 'deltas must be true or false', { deltas: 'must be a boolean' });
    }
    const state = stateOf(socket);
    const messageId = request.messageId;
    const { userId } = state;
    // The live listener first, then one query that checks ownership and replays (nothing falls
    // between the two); nothing is sent before this answer has gone out (`opened`), and nothing
    // at all to a subscriber the message is not shown to.
    let watcher: ReturnType<LiveHub['watcher']> | null = null;
    let giveBack: () => void = () => undefined;
    // A new subscription takes its place before the query (a client at its cap, or gone, costs no
    // replay); one that replaces the same message's takes it after, once the old one gave it back.
    const replacing = state.subscriptions.has(messageId);
    if (!replacing) {
      const place = takePlace(state);
      if ('error' in place) return place;
      giveBack = place.giveBack;
    } else if (state.stream.isReleased) {
      return gone('the socket is closed');
    }
    let open: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const delivery = this.hub.subscribe(
      messageId,
      afterSeq,
      (event) => {
        watcher?.beforeDelivery(event);
        socket.emit(event.type, event);
        watcher?.delivered(event);
      },
      () => {
        watcher?.close();
        giveBack();
        if (state.subscriptions.get(messageId) === delivery) state.subscriptions.delete(messageId);
      },
      () => state.outflow.room(),
      { fetch: (after) => this.deliberations.replayOwnedAfter(userId, messageId, after), gate: opened },
    );
    const refuse = (ack: AckRefusal): AckRefusal => {
      delivery.close();
      open();
      return ack;
    };
    try {
      if ((await delivery.firstReplay) === null)
        return refuse(errorAck(ApiError.notFound(`deliberation ${messageId}`)));
    } catch (error) {
      return refuse(errorAck(error, 'subscribe'));
    }
    // Closed meanwhile (the gateway shutting down).
    if (delivery.isEnded) return refuse(gone('the subscription was closed; subscribe again'));
    // Subscribing again replaces the subscription (and gives its place back first), also one made
    // by another subscribe to the same message that answered while this one was asking.
    state.subscriptions.get(messageId)?.close();
    if (replacing) {
      const place = takePlace(state);
      if ('error' in place) return refuse(place);
      giveBack = place.giveBack;
    }
    state.subscriptions.set(messageId, delivery);
    // Live deltas only for those who ask: the others cost no SUBSCRIBE and no `watch`.
    if (request.deltas) {
      watcher = this.live.watcher(
        messageId,
        (event) => socket.emit(event.type, event),
        () => state.outflow.room(),
      );
      // After the stored events it asked for: the answers so far, then deltas.
      watcher.follow(delivery);
    }
    // The ack is sent once this handler's promise settles; the replay waits for the next turn.
    setImmediate(open);
    return { ok: true };
  }

  private async subscribeBatch(socket: Socket, batchId: unknown): Promise<Ack> {
    if (typeof batchId !== 'string') {
      return refusal(400, 'batchId must be a string', { batchId: 'must be a string' });
    }
    const state = stateOf(socket);
    try {
      await this.batches.assertOwned(state.userId, batchId);
    } catch (error) {
      return errorAck(error, 'subscribe');
    }
    state.batches.get(batchId)?.();
    state.batches.delete(batchId);
    const place = takePlace(state);
    if ('error' in place) return place;
    const { giveBack } = place;
    // Once per finish: a batch run again (retry-failed) finishes, and says so, once more.
    let completedAt: string | null = null;
    const unsubscribe = this.batchHub.subscribe(batchId, (type, view) => {
      if (type === 'batch_complete') {
        if (completedAt === view.finishedAt) return;
        completedAt = view.finishedAt;
      }
      socket.emit(type, { type, ...view });
      // Snapshots do not wait for a slow client, but count towards its backlog.
      void state.outflow.room();
    });
    state.batches.set(batchId, () => {
      unsubscribe();
      giveBack();
    });
    return { ok: true };
  }

  /** Stops a running deliberation, as `POST /api/deliberations/:id/cancel` does. */
  @SubscribeMessage('cancel')
  async cancel(
    @ConnectedSocket() socket: Socket,
    @MessageBody() body: unknown,
  ): Promise<SocketAck<'cancel'>> {
    const payload = payloadOf(body, ['messageId']);
    if ('error' in payload) return payload;
    const request = payload.fields;
    if (typeof request.messageId !== 'string') {
      return invalidAck({ messageId: 'must be a string' });
    }
    try {
      await this.cancels.cancel(stateOf(socket).userId, request.messageId);
    } catch (error) {
      return errorAck(error, 'cancel');
    }
    return { ok: true, status: 'cancelled' };
  }

  @SubscribeMessage('unsubscribe')
  unsubscribe(@ConnectedSocket() socket: Socket, @MessageBody() body: unknown): SocketAck<'unsubscribe'> {
    const payload = payloadOf(body, ['messageId', 'batchId']);
    if ('error' in payload) return payload;
    const { messageId, batchId } = payload.fields;
    if (messageId !== undefined && batchId !== undefined) {
      return invalidAck({
        messageId: 'give messageId or batchId, not both',
        batchId: 'give messageId or batchId, not both',
      });
    }
    const state = stateOf(socket);
    if (batchId !== undefined) {
      if (typeof batchId !== 'string') return invalidAck({ batchId: 'must be a string' });
      state.batches.get(batchId)?.();
      state.batches.delete(batchId);
      return { ok: true };
    }
    if (typeof messageId !== 'string') return invalidAck({ messageId: 'must be a string' });
    state.subscriptions.get(messageId)?.close();
    return { ok: true };
  }
}

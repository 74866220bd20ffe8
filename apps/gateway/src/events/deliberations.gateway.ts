import { Inject, Logger } from '@nestjs/common';
import type { Metrics } from '@conclave/observability';
import { METRICS } from '../tokens';
import {
  ConnectedSocket,
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
  type OnGatewayDisconnect,
  type OnGatewayInit,
} from '@nestjs/websockets';
import type { Namespace, Socket } from 'socket.io';
import { ApiError } from '../common/api-error';
import { AuthService } from '../auth/auth.service';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { EventHub } from './event-hub';
import { BatchHub } from '../batches/batch-hub';
import { BatchesService } from '../batches/batches.service';
import type { OrderedDelivery } from './ordered-delivery';

interface SocketState {
  userId: string;
  subscriptions: Map<string, OrderedDelivery>;
  batches: Map<string, () => void>;
}

type Ack = { ok: true } | { error: { message: string; fields?: Record<string, string> } };

const stateOf = (socket: Socket): SocketState => socket.data as SocketState;

function errorAck(error: unknown): Ack {
  if (error instanceof ApiError) {
    const body = error.getResponse() as { message: string; fields?: Record<string, string> };
    return {
      error: body.fields ? { message: body.message, fields: body.fields } : { message: body.message },
    };
  }
  return { error: { message: 'Something went wrong on our side' } };
}

/** The Socket.IO protocol of 00-shared.md §4, namespace `/deliberations`. */
// CORS and the origin check are set for the whole server by OriginCheckedIoAdapter.
@WebSocketGateway({ namespace: '/deliberations' })
export class DeliberationsGateway implements OnGatewayInit<Namespace>, OnGatewayDisconnect<Socket> {
  private readonly logger = new Logger('socket');

  constructor(
    private readonly auth: AuthService,
    private readonly deliberations: DeliberationsService,
    private readonly hub: EventHub,
    private readonly batches: BatchesService,
    private readonly batchHub: BatchHub,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  afterInit(namespace: Namespace): void {
    this.metrics.onScrape('conclave_connected_sockets', async () => {
      this.metrics.connectedSockets.set(namespace.sockets.size);
    });
    namespace.use((socket, next) => {
      const auth = socket.handshake.auth as { token?: unknown };
      const token = typeof auth?.token === 'string' ? auth.token : undefined;
      this.auth.userFor(token).then(
        (userId) => {
          if (!userId) return next(new Error('unauthorized: give a valid API key as auth.token'));
          const state: SocketState = { userId, subscriptions: new Map(), batches: new Map() };
          socket.data = state;
          socket.use((packet, proceed) => this.recheck(socket, token, userId, packet, proceed));
          next();
        },
        (error: unknown) => {
          this.logger.error(`auth failed: ${String(error)}`);
          next(new Error('authentication is unavailable right now'));
        },
      );
    });
  }

  /** Every message re-checks the key: one revoked while its socket is open stops working there too. */
  private recheck(
    socket: Socket,
    token: string | undefined,
    userId: string,
    packet: unknown[],
    proceed: (error?: Error) => void,
  ): void {
    const refuse = (message: string) => {
      const ack = packet.at(-1);
      if (typeof ack === 'function') ack({ error: { message } });
    };
    this.auth.userFor(token).then(
      (current) => {
        if (current === userId) return proceed();
        refuse('unauthorized: the API key is no longer valid');
        socket.disconnect(true);
      },
      (error: unknown) => {
        this.logger.error(`auth failed: ${String(error)}`);
        refuse('authentication is unavailable right now');
      },
    );
  }

  handleDisconnect(socket: Socket): void {
    for (const delivery of stateOf(socket)?.subscriptions?.values() ?? []) delivery.close();
    for (const stop of stateOf(socket)?.batches?.values() ?? []) stop();
  }

  @SubscribeMessage('deliberate')
  async deliberate(@ConnectedSocket() socket: Socket, @MessageBody() body: unknown) {
    try {
      return await this.deliberations.start(stateOf(socket).userId, body);
    } catch (error) {
      return errorAck(error);
    }
  }

  @SubscribeMessage('subscribe')
  async subscribe(@ConnectedSocket() socket: Socket, @MessageBody() body: unknown): Promise<Ack> {
    const request = (body ?? {}) as { messageId?: unknown; afterSeq?: unknown; batchId?: unknown };
    if (request.batchId !== undefined) return this.subscribeBatch(socket, request.batchId);
    if (typeof request.messageId !== 'string') {
      return { error: { message: 'messageId is required', fields: { messageId: 'must be a string' } } };
    }
    const afterSeq = request.afterSeq ?? 0;
    if (typeof afterSeq !== 'number' || !Number.isInteger(afterSeq) || afterSeq < 0) {
      return {
        error: {
          message: 'afterSeq must be a whole number >= 0',
          fields: { afterSeq: 'must be an integer >= 0' },
        },
      };
    }
    const state = stateOf(socket);
    try {
      await this.deliberations.ownedMessage(state.userId, request.messageId);
    } catch (error) {
      return errorAck(error);
    }
    const messageId = request.messageId;
    state.subscriptions.get(messageId)?.close();
    const delivery = this.hub.subscribe(
      messageId,
      afterSeq,
      (event) => socket.emit(event.type, event),
      () => {
        if (state.subscriptions.get(messageId) === delivery) state.subscriptions.delete(messageId);
      },
    );
    state.subscriptions.set(messageId, delivery);
    return { ok: true };
  }

  private async subscribeBatch(socket: Socket, batchId: unknown): Promise<Ack> {
    if (typeof batchId !== 'string') {
      return { error: { message: 'batchId must be a string', fields: { batchId: 'must be a string' } } };
    }
    const state = stateOf(socket);
    try {
      await this.batches.assertOwned(state.userId, batchId);
    } catch (error) {
      return errorAck(error);
    }
    state.batches.get(batchId)?.();
    let completed = false;
    const stop = this.batchHub.subscribe(batchId, (type, view) => {
      if (type === 'batch_complete') {
        if (completed) return;
        completed = true;
      }
      socket.emit(type, { type, ...view });
    });
    state.batches.set(batchId, stop);
    return { ok: true };
  }

  @SubscribeMessage('unsubscribe')
  unsubscribe(@ConnectedSocket() socket: Socket, @MessageBody() body: unknown): Ack {
    const request = (body ?? {}) as { messageId?: unknown; batchId?: unknown };
    const state = stateOf(socket);
    if (typeof request.messageId === 'string') state.subscriptions.get(request.messageId)?.close();
    if (typeof request.batchId === 'string') {
      state.batches.get(request.batchId)?.();
      state.batches.delete(request.batchId);
    }
    return { ok: true };
  }
}

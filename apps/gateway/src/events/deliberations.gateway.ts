import { Logger } from '@nestjs/common';
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
import type { OrderedDelivery } from './ordered-delivery';

interface SocketState {
  userId: string;
  subscriptions: Map<string, OrderedDelivery>;
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
@WebSocketGateway({ namespace: '/deliberations', cors: { origin: true } })
export class DeliberationsGateway implements OnGatewayInit<Namespace>, OnGatewayDisconnect<Socket> {
  private readonly logger = new Logger('socket');

  constructor(
    private readonly auth: AuthService,
    private readonly deliberations: DeliberationsService,
    private readonly hub: EventHub,
  ) {}

  afterInit(namespace: Namespace): void {
    namespace.use((socket, next) => {
      const auth = socket.handshake.auth as { token?: unknown };
      const token = typeof auth?.token === 'string' ? auth.token : undefined;
      this.auth.userFor(token).then(
        (userId) => {
          if (!userId) return next(new Error('unauthorized: give a valid API key as auth.token'));
          const state: SocketState = { userId, subscriptions: new Map() };
          socket.data = state;
          next();
        },
        (error: unknown) => {
          this.logger.error(`auth failed: ${String(error)}`);
          next(new Error('authentication is unavailable right now'));
        },
      );
    });
  }

  handleDisconnect(socket: Socket): void {
    for (const delivery of stateOf(socket)?.subscriptions?.values() ?? []) delivery.close();
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
    if (request.batchId !== undefined)
      return { error: { message: 'batches are not available in this version' } };
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

  @SubscribeMessage('unsubscribe')
  unsubscribe(@ConnectedSocket() socket: Socket, @MessageBody() body: unknown): Ack {
    const messageId = (body as { messageId?: unknown } | undefined)?.messageId;
    if (typeof messageId === 'string') stateOf(socket).subscriptions.get(messageId)?.close();
    return { ok: true };
  }
}

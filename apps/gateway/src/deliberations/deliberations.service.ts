import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  isModelId,
  isTerminalStatus,
  isUuid,
  type DeliberationAccepted,
  type DeliberationView,
  type MessageStatus,
  type ModeName,
} from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { loadStageRows, returnedRows, TypeOrmDeliberationStore } from '@conclave/persistence';
import { RedisEventPublisher, StageQueue } from '@conclave/redis';
import { DataSource } from 'typeorm';
import { ApiError } from '../common/api-error';
import { CONFIG, REDIS_PRODUCER, STAGE_QUEUE } from '@conclave/platform';
import type { Redis } from 'ioredis';
import { RateLimiter } from '../common/rate-limiter';
import { RequestValidator, type ValidatedRequest } from './request-validator';
import {
  IdempotencyRace,
  idempotencyContext,
  previousResponse,
  recordResponse,
  type IdempotencyContext,
} from '../common/idempotency';

export interface MessageRecord {
  id: string;
  conversation_id: string;
  role: 'user' | 'assistant';
  content: string;
  status: MessageStatus;
  error: string | null;
  turn: number;
  mode: ModeName;
  config: Record<string, unknown> | null;
  needs_title: boolean;
  last_seq: number;
  created_at: Date;
  completed_at: Date | null;
  title: string | null;
}

const iso = (value: Date | null): string | null => (value ? new Date(value).toISOString() : null);

function modelsIn(value: unknown): string[] {
  if (typeof value === 'string') return isModelId(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(modelsIn);
  if (value && typeof value === 'object') return Object.values(value).flatMap(modelsIn);
  return [];
}

@Injectable()
export class DeliberationsService {
  private readonly logger = new Logger('deliberations');
  private readonly store: TypeOrmDeliberationStore;
  private readonly publisher: RedisEventPublisher;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly dataSource: DataSource,
    private readonly validator: RequestValidator,
    @Inject(STAGE_QUEUE) private readonly queue: StageQueue,
    @Inject(REDIS_PRODUCER) redis: Redis,
    private readonly limiter: RateLimiter,
  ) {
    this.store = new TypeOrmDeliberationStore(dataSource);
    this.publisher = new RedisEventPublisher(redis, config.redisPrefix);
  }

  async start(
    userId: string,
    body: unknown,
    idempotencyKey?: string | string[],
  ): Promise<DeliberationAccepted> {
    const idempotency = idempotencyContext(userId, 'deliberation', idempotencyKey, body);
    if (idempotency) {
      const earlier = await previousResponse<DeliberationAccepted>(this.dataSource, idempotency);
      if (earlier) return earlier;
    }
    const outcome = await this.validator.validate(body);
    if (!outcome.ok) throw ApiError.invalid(outcome.fields);
    await this.limiter.take(userId, 'deliberations');
    try {
      return await this.create(userId, outcome.request, idempotency);
    } catch (error) {
      // A twin request with the same key won the race: answer what it answered.
      if (error instanceof IdempotencyRace && idempotency) {
        const earlier = await previousResponse<DeliberationAccepted>(this.dataSource, idempotency);
        if (earlier) return earlier;
      }
      throw error;
    }
  }

  private async create(
    userId: string,
    request: ValidatedRequest,
    idempotency: IdempotencyContext | null,
  ): Promise<DeliberationAccepted> {
    const created = await this.dataSource.transaction(async (manager) => {
      let conversationId = request.conversationId;
      let turn = 1;
      if (conversationId) {
        const [conversation]: { id: string; mode: ModeName }[] = isUuid(conversationId)
          ? await manager.query(
              'SELECT id, mode FROM conversations WHERE id = $1 AND user_id = $2 FOR UPDATE',
              [conversationId, userId],
            )
          : [];
        if (!conversation) throw ApiError.notFound(`conversation ${conversationId}`);
        const [{ last, pending }]: { last: number | null; pending: number }[] = await manager.query(
          `SELECT MAX(turn) AS last,
             COUNT(*) FILTER (WHERE role = 'assistant' AND status IN ('queued', 'running'))::int AS pending
           FROM messages WHERE conversation_id = $1`,
          [conversationId],
        );
        if (conversation.mode !== request.mode) {
          throw ApiError.invalid({
            mode: `conversation ${conversationId} is a ${conversation.mode} conversation; a follow-up cannot switch to ${request.mode}`,
          });
        }
        if (last !== null && !request.definition.multiTurn) {
          throw ApiError.invalid({
            conversationId: `${request.mode} is single-turn: conversation ${conversationId} already has messages`,
          });
        }
        if (pending > 0) {
          throw new ApiError(
            409,
            `conversation ${conversationId} is still deliberating; send the follow-up once it has finished`,
          );
        }
        turn = (last ?? 0) + 1;
      } else {
        const [conversation]: { id: string }[] = await manager.query(
          'INSERT INTO conversations (user_id, mode) VALUES ($1, $2) RETURNING id',
          [userId, request.mode],
        );
        conversationId = conversation.id;
      }
      await manager.query(
        `INSERT INTO messages (conversation_id, role, content, status, turn, mode)
         VALUES ($1, 'user', $2, 'complete', $3, $4)`,
        [
          conversationId,
          request.definition.userContent?.(request.question, request.config) ?? request.question,
          turn,
          request.mode,
        ],
      );
      const [assistant]: { id: string }[] = await manager.query(
        `INSERT INTO messages (conversation_id, role, content, status, turn, mode, config, stage, needs_title)
         VALUES ($1, 'assistant', '', 'queued', $2, $3, $4, $5, $6) RETURNING id`,
        [conversationId, turn, request.mode, request.config, request.definition.firstStage, turn === 1],
      );
      await manager.query('UPDATE conversations SET updated_at = now() WHERE id = $1', [conversationId]);
      if (idempotency)
        await recordResponse(manager, idempotency, { conversationId, messageId: assistant.id });
      return { conversationId, messageId: assistant.id, isNew: turn === 1 };
    });

    try {
      if (created.isNew) await this.queue.enqueueTitle(created.messageId);
      await this.queue.enqueueStage(created.messageId, request.definition.firstStage);
    } catch (error) {
      this.logger.error(`could not enqueue ${created.messageId}: ${String(error)}`);
      await this.undo(created);
      throw new ApiError(503, 'The job queue is unavailable right now; nothing was started. Please retry.');
    }
    return { conversationId: created.conversationId, messageId: created.messageId };
  }

  private async undo(created: { conversationId: string; messageId: string; isNew: boolean }): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE response->>'messageId' = $1`, [
      created.messageId,
    ]);
    if (created.isNew) {
      await this.dataSource.query('DELETE FROM conversations WHERE id = $1', [created.conversationId]);
    } else {
      await this.dataSource.query(
        `DELETE FROM messages WHERE conversation_id = $1 AND turn = (SELECT turn FROM messages WHERE id = $2)`,
        [created.conversationId, created.messageId],
      );
    }
  }

  /** The assistant message behind a deliberation, if it belongs to the user. */
  async ownedMessage(userId: string, messageId: string): Promise<MessageRecord> {
    if (!isUuid(messageId)) throw ApiError.notFound(`deliberation ${messageId}`);
    const [message]: MessageRecord[] = await this.dataSource.query(
      `SELECT m.*, c.title FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.id = $1 AND m.role = 'assistant' AND c.user_id = $2`,
      [messageId, userId],
    );
    if (!message) throw ApiError.notFound(`deliberation ${messageId}`);
    return message;
  }

  async view(userId: string, messageId: string): Promise<DeliberationView> {
    return this.toView(await this.ownedMessage(userId, messageId));
  }

  async toView(message: MessageRecord): Promise<DeliberationView> {
    const definition = modeDefinition(message.mode);
    const rows = await loadStageRows(this.dataSource, message.id);
    const title = message.needs_title ? message.title : null;
    const models = modelsIn(message.config);
    return {
      messageId: message.id,
      conversationId: message.conversation_id,
      mode: message.mode,
      status: message.status,
      error: message.error,
      createdAt: iso(message.created_at) ?? '',
      completedAt: iso(message.completed_at),
      simulated:
        !this.config.realProviderConfigured ||
        (models.length > 0 && models.every((m) => m.startsWith('sim/'))),
      usage: await this.store.usage(message.id),
      result: definition ? definition.load(rows, message.config, title) : null,
    };
  }

  async listConversations(userId: string) {
    const rows: {
      id: string;
      title: string | null;
      mode: ModeName;
      created_at: Date;
      updated_at: Date;
      turns: number;
      last_status: MessageStatus | null;
    }[] = await this.dataSource.query(
      `SELECT c.id, c.title, c.mode, c.created_at, c.updated_at,
         (SELECT COUNT(*)::int FROM messages m WHERE m.conversation_id = c.id AND m.role = 'assistant') AS turns,
         (SELECT m.status FROM messages m WHERE m.conversation_id = c.id AND m.role = 'assistant'
            ORDER BY m.turn DESC LIMIT 1) AS last_status
       FROM conversations c WHERE c.user_id = $1 ORDER BY c.updated_at DESC LIMIT 500`,
      [userId],
    );
    return rows.map((r) => ({
      id: r.id,
      title: r.title,
      mode: r.mode,
      createdAt: iso(r.created_at),
      updatedAt: iso(r.updated_at),
      turns: r.turns,
      lastStatus: r.last_status,
    }));
  }

  async conversation(userId: string, conversationId: string) {
    const [conversation]: {
      id: string;
      title: string | null;
      mode: ModeName;
      created_at: Date;
      updated_at: Date;
    }[] = isUuid(conversationId)
      ? await this.dataSource.query('SELECT * FROM conversations WHERE id = $1 AND user_id = $2', [
          conversationId,
          userId,
        ])
      : [];
    if (!conversation) throw ApiError.notFound(`conversation ${conversationId}`);
    const messages: MessageRecord[] = await this.dataSource.query(
      `SELECT m.*, c.title FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.conversation_id = $1 ORDER BY m.turn, m.role DESC`,
      [conversationId],
    );
    return {
      id: conversation.id,
      title: conversation.title,
      mode: conversation.mode,
      createdAt: iso(conversation.created_at),
      updatedAt: iso(conversation.updated_at),
      messages: await Promise.all(
        messages.map(async (m) => ({
          id: m.id,
          role: m.role,
          turn: m.turn,
          content: m.content,
          status: m.status,
          error: m.error,
          createdAt: iso(m.created_at),
          completedAt: iso(m.completed_at),
          ...(m.role === 'assistant' ? { deliberation: await this.toView(m) } : {}),
        })),
      ),
    };
  }

  async deleteConversation(userId: string, conversationId: string): Promise<void> {
    const unfinished: { id: string; last_seq: number }[] = isUuid(conversationId)
      ? await this.dataSource.query(
          `SELECT m.id, m.last_seq FROM messages m JOIN conversations c ON c.id = m.conversation_id
           WHERE c.id = $1 AND c.user_id = $2 AND m.role = 'assistant' AND m.status IN ('queued', 'running')`,
          [conversationId, userId],
        )
      : [];
    const rows = isUuid(conversationId)
      ? returnedRows(
          await this.dataSource.query(
            'DELETE FROM conversations WHERE id = $1 AND user_id = $2 RETURNING id',
            [conversationId, userId],
          ),
        )
      : [];
    if (rows.length === 0) throw ApiError.notFound(`conversation ${conversationId}`);
    // Live subscribers of a running deliberation get a last event; nothing is stored any more.
    const at = new Date().toISOString();
    await this.publisher
      .publish(
        unfinished.map((m) => ({
          type: 'error',
          messageId: m.id,
          seq: m.last_seq + 1,
          at,
          message: 'The conversation was deleted.',
        })),
      )
      .catch((error: unknown) =>
        this.logger.warn(`could not notify subscribers of a deletion: ${String(error)}`),
      );
  }

  async isFinished(messageId: string): Promise<boolean> {
    const [row]: { status: MessageStatus }[] = await this.dataSource.query(
      'SELECT status FROM messages WHERE id = $1',
      [messageId],
    );
    return !row || isTerminalStatus(row.status);
  }

  eventsAfter(messageId: string, afterSeq: number) {
    return this.store.eventsAfter(messageId, afterSeq);
  }
}

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  anonymousGrades,
  deliberationGrades,
  isModelId,
  isTerminalStatus,
  isUuid,
  type DeliberationAccepted,
  type DeliberationView,
} from '@conclave/contracts';
import { modeDefinition, type EventPublisher, type HistoryTurn } from '@conclave/deliberation';
import { degradationOf, partialOf, startedModelOf, uncommittedStage } from '@conclave/outcomes';
import {
  ConversationsRepository,
  DeliberationsRepository,
  type RecentDeliberation,
  IdempotencyRepository,
  TypeOrmDeliberationStore,
  UsageRepository,
  type FollowUpState,
  type StoredMessage,
} from '@conclave/persistence';
import { publishControl, StageQueue, type RedisClient } from '@conclave/redis';
import { ApiError, queueUnavailable } from '../common/api-error';
import { CONFIG, EVENT_PUBLISHER, REDIS_PRODUCER, STAGE_QUEUE } from '@conclave/platform';
import { RateLimiter } from '../common/rate-limiter';
import { BudgetsService } from '../budgets/budgets.service';
import { PresetsService } from '../presets/presets.service';
import { withConversationPanel, withoutConfigFields } from './follow-up-panel';
import {
  knownProperties,
  RequestValidator,
  type ValidatedRequest,
  type ValidationOutcome,
} from './request-validator';
import { isPlainObject } from '../presets/apply-preset';
import {
  IdempotencyRace,
  idempotencyContext,
  previousResponse,
  type IdempotencyContext,
} from '../common/idempotency';

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

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly store: TypeOrmDeliberationStore,
    private readonly deliberations: DeliberationsRepository,
    private readonly conversations: ConversationsRepository,
    private readonly usage: UsageRepository,
    private readonly idempotencyKeys: IdempotencyRepository,
    private readonly validator: RequestValidator,
    @Inject(STAGE_QUEUE) private readonly queue: StageQueue,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
    private readonly limiter: RateLimiter,
    private readonly budgets: BudgetsService,
    private readonly presets: PresetsService,
    @Inject(EVENT_PUBLISHER) private readonly publisher: EventPublisher,
  ) {}

  /**
   * `options.history` (the OpenAI-compatible surface): earlier exchanges stored as completed turns
   * of the new conversation before this one, so the worker loads them as a follow-up's history.
   * Multi-turn modes only, and not with a conversationId. `options.apiKeyId`: the key the request
   * was authenticated with (none in single-user mode), stored with the turn so that revoking the
   * key cancels it.
   */
  async start(
    userId: string,
    body: unknown,
    idempotencyKey?: string | string[],
    options: { history?: HistoryTurn[]; apiKeyId?: string | null } = {},
  ): Promise<DeliberationAccepted> {
    const history = options.history ?? [];
    const idempotency = idempotencyContext(
      userId,
      'deliberation',
      idempotencyKey,
      history.length > 0 ? { body, history } : body,
    );
    if (idempotency) {
      const earlier = await previousResponse<DeliberationAccepted>(this.idempotencyKeys, idempotency);
      if (earlier) return earlier;
    }
    // The fingerprint above covers the request as sent (its preset's name), the checks below what it asks for.
    const outcome = await this.validateRequest(userId, body);
    if (!outcome.ok) throw ApiError.invalid(outcome.fields);
    await this.budgets.assertWithinBudget(userId, 'the deliberation');
    await this.limiter.take(userId, 'deliberations');
    try {
      return await this.create(userId, outcome.request, idempotency, history, options.apiKeyId ?? null);
    } catch (error) {
      // A twin request with the same key won the race: answer what it answered.
      if (error instanceof IdempotencyRace && idempotency) {
        const earlier = await previousResponse<DeliberationAccepted>(this.idempotencyKeys, idempotency);
        if (earlier) return earlier;
      }
      throw error;
    }
  }

  /**
   * The request validated as it will run: its `preset` applied (400 naming `preset` or `mode` if
   * it cannot be), then, for a follow-up, its conversation's mode, roster and options beneath what
   * it names itself (withConversationPanel). An option carried over from the last turn that no
   * longer fits what this turn names (a quorum larger than its new roster, a fallback that is now
   * the chairman) is left behind rather than blamed on a caller who never sent it; the roster itself
   * is never dropped.
   */
  async validateRequest(userId: string, body: unknown): Promise<ValidationOutcome> {
    const request = await this.presets.applyTo(userId, body);
    const followUp = await this.followUpOf(userId, request);
    if (!followUp) return this.validator.validate(request);
    const outcome = await this.validator.validate(followUp.request);
    if (outcome.ok) return outcome;
    const stale = followUp.droppable.filter((path) => Object.hasOwn(outcome.fields, path));
    if (stale.length === 0) return outcome;
    return this.validator.validate(withoutConfigFields(followUp.request, stale));
  }

  /** A follow-up's request over its conversation's panel; null when it names no conversation of the user's. */
  private async followUpOf(
    userId: string,
    request: unknown,
  ): Promise<{ request: Record<string, unknown>; droppable: string[] } | null> {
    if (!isPlainObject(request)) return null;
    const { conversationId } = request;
    if (typeof conversationId !== 'string' || !isUuid(conversationId)) return null;
    const panel = await this.conversations.lastPanel(userId, conversationId);
    // Not the user's: the turn's admission answers 404, as without a panel.
    const definition = panel ? modeDefinition(panel.mode) : undefined;
    if (!panel || !definition) return null;
    const followUp = withConversationPanel(panel, request, knownProperties(definition.configSchema));
    const roster = new Set(
      definition.describe(this.config.defaults).roster.map((r) => `modeConfig.${r.field}`),
    );
    return { request: followUp.request, droppable: followUp.inherited.filter((path) => !roster.has(path)) };
  }

  private async create(
    userId: string,
    request: ValidatedRequest,
    idempotency: IdempotencyContext | null,
    history: HistoryTurn[],
    apiKeyId: string | null,
  ): Promise<DeliberationAccepted> {
    const { conversationId, definition } = request;
    if (conversationId && !isUuid(conversationId)) throw ApiError.notFound(`conversation ${conversationId}`);
    if (history.length > 0 && (conversationId || !definition.multiTurn)) {
      throw new Error('earlier turns are stored only with a new conversation of a multi-turn mode');
    }
    // A follow-up is admitted under its conversation's row lock: one at a time, in the same mode.
    const admit = ({ mode, lastTurn, pending }: FollowUpState) => {
      if (mode !== request.mode) {
        throw ApiError.invalid({
          mode: `conversation ${conversationId} is a ${mode} conversation; a follow-up cannot switch to ${request.mode}`,
        });
      }
      if (lastTurn !== null && !definition.multiTurn) {
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
    };
    const created = await this.deliberations.startTurn(
      {
        userId,
        conversationId,
        mode: request.mode,
        userContent: definition.userContent?.(request.question, request.config) ?? request.question,
        config: request.config,
        firstStage: definition.firstStage,
        ...(history.length > 0 ? { history } : {}),
        apiKeyId,
        ...(request.grading ? { grading: request.grading } : {}),
      },
      idempotency,
      admit,
    );
    if (!created) throw ApiError.notFound(`conversation ${conversationId}`);

    try {
      await this.queue.enqueueStage(created.messageId, definition.firstStage, {
        ...(created.start ? { start: created.start } : {}),
      });
    } catch (error) {
      this.logger.error(`could not enqueue ${created.messageId}: ${String(error)}`);
      // A turn that cannot be taken back stays stored and will run (the workers' reconciler starts
      // it once the queue is back): it is accepted, never refused as if nothing had been kept (a
      // retry would start a second one).
      const discarded = await this.deliberations.discardTurn(created).then(
        () => true,
        (discardError: unknown) => {
          this.logger.error(`could not take back ${created.messageId}, kept: ${String(discardError)}`);
          return false;
        },
      );
      if (discarded) throw queueUnavailable();
    }
    return { conversationId: created.conversationId, messageId: created.messageId };
  }

  /** The user's most recent deliberations, newest first (at most `limit`). */
  recent(userId: string, limit: number): Promise<RecentDeliberation[]> {
    return this.deliberations.recent(userId, limit);
  }

  /** The assistant message behind a deliberation, if it belongs to the user. */
  async ownedMessage(userId: string, messageId: string): Promise<StoredMessage> {
    const message = isUuid(messageId) ? await this.deliberations.ownedMessage(userId, messageId) : null;
    if (!message) throw ApiError.notFound(`deliberation ${messageId}`);
    return message;
  }

  async view(userId: string, messageId: string): Promise<DeliberationView> {
    // The message and its parts read side by side: one round trip's wait (a /v1 answer waits on it).
    // The parts of a message that is not the user's are read for nothing, never shown.
    const [message, parts] = await Promise.all([
      this.ownedMessage(userId, messageId),
      isUuid(messageId) ? this.partsOf(messageId) : null,
    ]);
    return this.toView(message, parts ?? undefined);
  }

  /** A message's stage rows, usage and calls, read side by side. */
  private async partsOf(messageId: string) {
    const [rows, usage, calls] = await Promise.all([
      this.deliberations.stageRows(messageId),
      this.usage.ofMessage(messageId),
      this.deliberations.calls(messageId),
    ]);
    return { rows, usage, calls };
  }

  async toView(
    message: StoredMessage,
    parts?: Awaited<ReturnType<DeliberationsService['partsOf']>>,
  ): Promise<DeliberationView> {
    const definition = modeDefinition(message.mode);
    const { rows, usage, calls } = parts ?? (await this.partsOf(message.id));
    const title = message.needsTitle ? message.title : null;
    const models = modelsIn(message.config);
    // A run that ended early: the calls it had started say which stage it was in, and which of
    // them were still running (their outcomes are stored only once they settle).
    const endedEarly = message.status === 'cancelled' || message.status === 'failed';
    const started = endedEarly
      ? ((await this.deliberations.startedCallsOf([message.id])).get(message.id) ?? [])
      : [];
    const open = uncommittedStage(
      message.mode,
      message.status,
      rows.map((r) => r.stageType),
      calls,
      started,
    );
    const partial = partialOf({
      mode: message.mode,
      status: message.status,
      error: message.error,
      stage: open,
      // Read only for a deliberation that ended inside a stage: its answers are in no stage row.
      calls: open === null ? [] : await this.deliberations.stageCalls(message.id, open),
      started: started.map((c) => ({ ...c, model: startedModelOf(message.mode, message.config, c) })),
    });
    const result = definition ? definition.load(rows, message.config, title) : null;
    const graded = deliberationGrades(rows, definition?.facts);
    // 05-delphi.md: estimates are anonymous while the exercise runs, so are their grades.
    const grades =
      graded && definition?.facts?.anonymousWhileRunning && !isTerminalStatus(message.status)
        ? anonymousGrades(graded)
        : graded;
    return {
      messageId: message.id,
      conversationId: message.conversationId,
      mode: message.mode,
      status: message.status,
      error: message.error,
      createdAt: iso(message.createdAt) ?? '',
      completedAt: iso(message.completedAt),
      simulated:
        !this.config.realProviderConfigured ||
        (models.length > 0 && models.every((m) => m.startsWith('sim/'))),
      usage,
      calls,
      result,
      partial,
      degraded: degradationOf({ mode: message.mode, calls, result, partial, status: message.status }),
      ...(grades ? { grades } : {}),
    };
  }

  async listConversations(userId: string) {
    const conversations = await this.conversations.list(userId);
    return conversations.map((c) => ({
      id: c.id,
      title: c.title,
      mode: c.mode,
      createdAt: iso(c.createdAt),
      updatedAt: iso(c.updatedAt),
      turns: c.turns,
      lastStatus: c.lastStatus,
      batchId: c.batchId,
      batchName: c.batchName,
      question: c.question,
    }));
  }

  async conversation(userId: string, conversationId: string) {
    const conversation = isUuid(conversationId)
      ? await this.conversations.owned(userId, conversationId)
      : null;
    if (!conversation) throw ApiError.notFound(`conversation ${conversationId}`);
    const messages = await this.conversations.messages(conversationId);
    return {
      id: conversation.id,
      title: conversation.title,
      mode: conversation.mode,
      createdAt: iso(conversation.createdAt),
      updatedAt: iso(conversation.updatedAt),
      batchId: messages.find((m) => m.batchId)?.batchId ?? null,
      messages: await Promise.all(
        messages.map(async (m) => ({
          id: m.id,
          role: m.role,
          turn: m.turn,
          content: m.content,
          status: m.status,
          error: m.error,
          createdAt: iso(m.createdAt),
          completedAt: iso(m.completedAt),
          // The turn's resolved mode config (its roster among it): a follow-up starts from it.
          ...(m.role === 'assistant' ? { config: m.config, deliberation: await this.toView(m) } : {}),
        })),
      ),
    };
  }

  async deleteConversation(userId: string, conversationId: string): Promise<void> {
    // Its first job carried the question (FirstStageStart) and is kept after it ends: read which it
    // is and remove it before the rows go.
    const first = isUuid(conversationId)
      ? await this.conversations.firstDeliberation(userId, conversationId)
      : null;
    const firstStage = first ? modeDefinition(first.mode)?.firstStage : undefined;
    if (first && firstStage) {
      // Before the rows go, so that no worker takes a waiting one from here on (it would send the
      // question beside the opening that finds the message gone). A running job is left to end:
      // its calls are stopped below.
      await this.queue
        .removeStage(first.messageId, firstStage)
        .catch((error: unknown) =>
          this.logger.warn(`could not remove the first job of a deleted conversation: ${String(error)}`),
        );
    }
    const unfinished = isUuid(conversationId)
      ? await this.conversations.delete(userId, conversationId)
      : null;
    if (!unfinished) throw ApiError.notFound(`conversation ${conversationId}`);
    // Live subscribers of a running deliberation get a last event; nothing is stored any more.
    const at = new Date().toISOString();
    await this.publisher
      .publish(
        unfinished.map((m) => ({
          type: 'error',
          messageId: m.messageId,
          seq: m.lastSeq + 1,
          at,
          message: 'The conversation was deleted.',
        })),
      )
      .catch((error: unknown) =>
        this.logger.warn(`could not notify subscribers of a deletion: ${String(error)}`),
      );
    // Its calls in flight are paid for by the minute: stop them too.
    await Promise.all(
      unfinished.map((m) =>
        publishControl(this.redis, this.config.redisPrefix, { type: 'cancel', messageId: m.messageId }),
      ),
    ).catch((error: unknown) =>
      this.logger.warn(`could not stop a deleted deliberation's calls: ${String(error)}`),
    );
  }

  /** The events stored after a seq, and whether the deliberation has ended, in one query (a subscription's replay). */
  replayAfter(messageId: string, afterSeq: number) {
    return this.store.replayAfter(messageId, afterSeq);
  }

  /** replayAfter when the message is the user's (an assistant message of their conversation); null when not. */
  async replayOwnedAfter(userId: string, messageId: string, afterSeq: number) {
    return isUuid(messageId) ? this.store.replayOwnedAfter(userId, messageId, afterSeq) : null;
  }
}

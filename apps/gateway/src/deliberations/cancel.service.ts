import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { isTerminalStatus, type DeliveredEvent, type MessageStatus } from '@conclave/contracts';
import { endingWrite } from '@conclave/deliberation';
import { BatchDispatcher, DeliberationsRepository, TypeOrmDeliberationStore } from '@conclave/persistence';
import { CONFIG, REDIS_PRODUCER, STAGE_QUEUE } from '@conclave/platform';
import { publishControl, RedisEventPublisher, StageQueue, type RedisClient } from '@conclave/redis';
import { ApiError } from '../common/api-error';
import { DeliberationsService } from './deliberations.service';

/** What a user's stop records as the deliberation's error and the `cancelled` event's reason. */
export const USER_CANCEL_REASON = 'Cancelled by the user.';

/** A deliberation to stop: where it is, and the batch it belongs to. */
export interface StopTarget {
  messageId: string;
  stage: string | null;
  batchId: string | null;
}

const alreadyEnded = (status: MessageStatus | null) =>
  new ApiError(
    409,
    `This deliberation has already ended (status: ${status ?? 'unknown'}); there is nothing to cancel.`,
  );

/**
 * Stops running deliberations from the gateway (a user's cancel, a batch's cancel): the store's
 * ending write (endingWrite: event `cancelled { reason }`, status `cancelled`, no further stage),
 * then its events to every gateway and a `cancel` on the control channel, on which every worker
 * aborts the calls it runs for the message. Calls in flight store their outcomes (usage) when they
 * settle; their stage's commit then finds the message ended and writes nothing.
 */
@Injectable()
export class CancelService {
  private readonly logger = new Logger('cancel');
  private readonly publisher: RedisEventPublisher;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly store: TypeOrmDeliberationStore,
    private readonly deliberations: DeliberationsService,
    private readonly repository: DeliberationsRepository,
    private readonly dispatcher: BatchDispatcher,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
    @Inject(STAGE_QUEUE) private readonly queue: StageQueue,
  ) {
    this.publisher = new RedisEventPublisher(redis, config.redisPrefix);
  }

  /**
   * The user's stop: 404 for a deliberation that is not theirs, 409 naming the status for one that
   * has ended (also when it ended while this ran). Resolves once it is stored as cancelled, with
   * `reason` as its error (a stop on the user's behalf says why).
   */
  async cancel(userId: string, messageId: string, reason: string = USER_CANCEL_REASON): Promise<void> {
    const message = await this.deliberations.ownedMessage(userId, messageId);
    if (isTerminalStatus(message.status)) throw alreadyEnded(message.status);
    if (message.status === 'queued' && message.stage) {
      // Still waiting for a worker: its job goes first, so no worker can take it from here on (a
      // new conversation's first job carries the question, and would send it beside the opening
      // that sees the stop). A job a worker holds already is left to the abort below; if this
      // stop then fails, the reconciler finds the queued message without a job and enqueues it.
      await this.queue
        .removeStage(message.id, message.stage)
        .catch((error: unknown) =>
          this.logger.warn(`could not remove the job of ${message.id}: ${String(error)}`),
        );
    }
    const stopped = await this.stop(
      { messageId: message.id, stage: message.stage, batchId: message.batchId },
      reason,
    );
    if (stopped === 'missing') throw ApiError.notFound(`deliberation ${messageId}`);
    // It ended meanwhile (its last stage committed, a failure, another stop): that one stands.
    if (stopped === 'ended') throw alreadyEnded(await this.repository.status(message.id));
  }

  /**
   * Publishes the stored `cancelled` events of deliberations ended without a stop of their own (a
   * batch's queued items): nothing of theirs runs, so no worker needs the control channel. A lost
   * publish is logged: subscribers catch up from the store.
   */
  async announce(events: DeliveredEvent[]): Promise<void> {
    await this.publisher
      .publish(events)
      .catch((error: unknown) =>
        this.logger.warn(`could not publish ${events.length} cancels: ${String(error)}`),
      );
  }

  /**
   * Ends a deliberation as cancelled with `reason`, unless it has ended already. With `moveBatch`
   * (the default), a batch item's batch then starts its next items. Redis trouble after the write
   * is logged, not thrown: the stop is stored, subscribers catch up from the store, and calls that
   * missed the abort end at their timeout without writing anything but their outcome.
   */
  async stop(
    target: StopTarget,
    reason: string,
    options: { moveBatch?: boolean } = {},
  ): Promise<'stopped' | 'ended' | 'missing'> {
    const written = await this.store.writeStage(
      target.messageId,
      endingWrite(target.stage, { kind: 'cancelled', reason }),
    );
    if (written.kind === 'missing') return 'missing';
    if (written.kind !== 'written') return 'ended';
    const warn = (what: string) => (error: unknown) =>
      this.logger.warn(`${what} of ${target.messageId}: ${String(error)}`);
    await Promise.all([
      publishControl(this.redis, this.config.redisPrefix, {
        type: 'cancel',
        messageId: target.messageId,
      }).catch(warn('could not abort the calls')),
      this.publisher.publish(written.events).catch(warn('could not publish the cancel')),
    ]);
    if (target.batchId && options.moveBatch !== false) {
      // The reconciler starts the batch's next items if this is lost.
      await this.dispatcher
        .itemFinished(target.batchId)
        .catch(warn('could not move the batch on after the stop'));
    }
    return 'stopped';
  }
}

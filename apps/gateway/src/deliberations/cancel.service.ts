import { Inject, Injectable, Logger } from '@nestjs/common';
import { isTerminalStatus, type MessageStatus } from '@conclave/contracts';
import { DeliberationsRepository, WorkStops, type StopTarget } from '@conclave/persistence';
import { STAGE_QUEUE } from '@conclave/platform';
import { StageQueue } from '@conclave/redis';
import { ApiError } from '../common/api-error';
import { DeliberationsService } from './deliberations.service';

/** What a user's stop records as the deliberation's error and the `cancelled` event's reason. */
export const USER_CANCEL_REASON = 'Cancelled by the user.';

const alreadyEnded = (status: MessageStatus | null) =>
  new ApiError(
    409,
    `This deliberation has already ended (status: ${status ?? 'unknown'}); there is nothing to cancel.`,
  );

/**
 * A user's stop of a deliberation, from the gateway. The stop itself is WorkStops's (shared with a
 * batch's cancel, an admin's cancel of a user's work and a key's revocation): the store's ending
 * write (event `cancelled { reason }`, status `cancelled`, no further stage), then its events to
 * every gateway and a `cancel` on the control channel, on which every worker aborts the calls it
 * runs for the message.
 */
@Injectable()
export class CancelService {
  private readonly logger = new Logger('cancel');

  constructor(
    private readonly deliberations: DeliberationsService,
    private readonly repository: DeliberationsRepository,
    private readonly stops: WorkStops,
    @Inject(STAGE_QUEUE) private readonly queue: StageQueue,
  ) {}

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

  /** Ends a deliberation as cancelled with `reason`, unless it has ended already (WorkStops.stop). */
  stop(
    target: StopTarget,
    reason: string,
    options: { moveBatch?: boolean } = {},
  ): Promise<'stopped' | 'ended' | 'missing'> {
    return this.stops.stop(target, reason, options);
  }
}

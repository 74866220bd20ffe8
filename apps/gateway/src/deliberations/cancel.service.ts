import { Injectable } from '@nestjs/common';
import { isTerminalStatus, type MessageStatus } from '@conclave/contracts';
import { DeliberationsRepository, WorkStops } from '@conclave/persistence';
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
  constructor(
    private readonly deliberations: DeliberationsService,
    private readonly repository: DeliberationsRepository,
    private readonly stops: WorkStops,
  ) {}

  /**
   * The user's stop: 404 for a deliberation that is not theirs, 409 naming the status for one that
   * has ended (also when it ended while this ran). Resolves once it is stored as cancelled, with
   * `reason` as its error (a stop on the user's behalf says why).
   */
  async cancel(userId: string, messageId: string, reason: string = USER_CANCEL_REASON): Promise<void> {
    const message = await this.deliberations.ownedMessage(userId, messageId);
    if (isTerminalStatus(message.status)) throw alreadyEnded(message.status);
    const stopped = await this.stops.stop(
      {
        messageId: message.id,
        stage: message.stage,
        batchId: message.batchId,
        queued: message.status === 'queued',
      },
      reason,
    );
    if (stopped === 'missing') throw ApiError.notFound(`deliberation ${messageId}`);
    // It ended meanwhile (its last stage committed, a failure, another stop): that one stands.
    if (stopped === 'ended') throw alreadyEnded(await this.repository.status(message.id));
  }
}

import type { DeliveredEvent } from '@conclave/contracts';
import { endRun, type EventPublisher } from '@conclave/deliberation';
import type { BatchDispatcher } from './batches';
import type { TypeOrmDeliberationStore } from './deliberation.store';
import type { BatchesRepository } from './repositories/batches.repository';
import type { OpenWorkRepository, WorkOwner } from './repositories/open-work.repository';

/** What revoking a key records as the reason of each deliberation and batch item it cancels. */
export const KEY_REVOKED_REASON = 'Cancelled: the API key that started it was revoked.';
/** What an administrator's cancel of a user's work records. */
export const ADMIN_CANCEL_REASON = 'Cancelled by an administrator.';

/** A deliberation to stop: where it is, and the batch it belongs to. */
export interface StopTarget {
  messageId: string;
  stage: string | null;
  batchId: string | null;
  /** Still waiting for a worker: its job is removed before the ending write. */
  queued?: boolean;
}

/** What a cancel of someone's work stopped. */
export interface CancelledWork {
  /** Deliberations outside batches (REST, Socket.IO, MCP, /v1, CLI) that were queued or running. */
  deliberations: number;
  /** Batches that were queued or running (or out of budget with items still running), now cancelled. */
  batches: number;
  /** Their items that were queued or running. */
  batchItems: number;
}

export interface WorkStopsDeps {
  store: TypeOrmDeliberationStore;
  batches: BatchesRepository;
  openWork: OpenWorkRepository;
  /**
   * Redis, when it can be reached (@conclave/redis builds each part): the control channel (every
   * worker aborts the calls it runs for a stopped deliberation), the events' channels, the stage
   * queue (a queued deliberation's job is removed) and the batch dispatcher. Null when it cannot (a
   * command-line run without Redis): the stops are then stored in PostgreSQL only (see cancelWorkOf).
   */
  redis: {
    /** Tells every worker to abort the calls it runs for the message (publishControl `cancel`). */
    abortCalls(messageId: string): Promise<void>;
    /** The stage queue (StageQueue): removes a queued deliberation's job. */
    queue: { removeStage(messageId: string, stage: string): Promise<unknown> };
    dispatcher: BatchDispatcher;
    /** The process's one event publisher (EVENT_PUBLISHER). */
    publisher: EventPublisher;
  } | null;
  warn: (message: string) => void;
}

/**
 * Stops deliberations and batches, from a gateway (a user's stop, a batch's cancel, an admin's
 * cancel of a user's work) or from the command line (revoking a key). Every stop is the store's
 * ending write (endRun: event `cancelled { reason }`, status `cancelled`, no further stage),
 * so what was stored before it stays as the partial result; then its events to every gateway and
 * a `cancel` on the control channel, on which every worker aborts the calls it runs for the
 * message. Calls in flight store their outcomes (usage) when they settle; their stage's commit
 * then finds the message ended and writes nothing.
 */
export class WorkStops {
  private readonly publisher: EventPublisher | null;

  constructor(private readonly deps: WorkStopsDeps) {
    this.publisher = deps.redis?.publisher ?? null;
  }

  /**
   * Ends a deliberation as cancelled with `reason`, unless it has ended already. With `moveBatch`
   * (the default), a batch item's batch then starts its next items. Redis trouble after the write
   * is logged, not thrown: the stop is stored, subscribers catch up from the store, and calls that
   * missed the abort end at their timeout (or when a worker's reconciler finds the message ended)
   * without writing anything but their outcome.
   */
  async stop(
    target: StopTarget,
    reason: string,
    options: { moveBatch?: boolean } = {},
  ): Promise<'stopped' | 'ended' | 'missing'> {
    if (target.queued && target.stage && this.deps.redis) {
      // Its job goes first, so no worker can take it from here on (a new conversation's first job
      // carries the question, and would send it beside the opening that sees the stop). A job a
      // worker holds already is left to the abort below; if the write below fails, the reconciler
      // finds the queued message without a job and enqueues it again.
      await this.deps.redis.queue
        .removeStage(target.messageId, target.stage)
        .catch((error: unknown) =>
          this.deps.warn(`could not remove the job of ${target.messageId}: ${String(error)}`),
        );
    }
    const written = await endRun(this.deps.store, target.messageId, target.stage, {
      kind: 'cancelled',
      reason,
    });
    if (written.kind === 'missing') return 'missing';
    if (written.kind !== 'written') return 'ended';
    const warn = (what: string) => (error: unknown) =>
      this.deps.warn(`${what} of ${target.messageId}: ${String(error)}`);
    const redis = this.deps.redis;
    if (redis) {
      await Promise.all([
        redis.abortCalls(target.messageId).catch(warn('could not abort the calls')),
        this.publisher?.publish(written.events).catch(warn('could not publish the cancel')),
      ]);
    }
    if (target.batchId && options.moveBatch !== false) {
      // The reconciler starts the batch's next items if this is lost (or Redis is away).
      if (redis)
        await redis.dispatcher.itemFinished(target.batchId).catch(warn('could not move the batch on'));
      else await this.deps.batches.closeIfDone(target.batchId).catch(warn('could not close the batch'));
    }
    return 'stopped';
  }

  /**
   * Publishes the stored `cancelled` events of deliberations ended without a stop of their own (a
   * batch's queued items): nothing of theirs runs, so no worker needs the control channel. A lost
   * publish is logged: subscribers catch up from the store.
   */
  async announce(events: DeliveredEvent[]): Promise<void> {
    if (!this.publisher || events.length === 0) return;
    await this.publisher
      .publish(events)
      .catch((error: unknown) =>
        this.deps.warn(`could not publish ${events.length} cancels: ${String(error)}`),
      );
  }

  /**
   * Cancels a batch that has not finished: no item is dispatched after it (marked under the
   * batch's lock), its queued items end at once in one statement, its running ones are stopped one
   * by one as a user's stop stops a deliberation. Each item records `reason`. Resolves with whether
   * the batch was still going (it started or would start items) and how many items it ended. A
   * batch out of budget keeps that status (it starts nothing more anyway).
   */
  async cancelBatch(batchId: string, reason: string): Promise<{ going: boolean; items: number }> {
    const batch = await this.deps.batches.find(batchId);
    if (!batch) return { going: false, items: 0 };
    const going = batch.status === 'queued' || batch.status === 'running';
    if (going) await this.deps.batches.markCancelled(batchId);
    // An item a worker holds at this instant is skipped here (see cancelQueuedItems) and stopped below.
    const queued = await this.deps.batches.cancelQueuedItems(batchId, reason);
    await this.announce(queued);
    let ended = queued.length;
    for (const item of await this.deps.batches.unfinishedItems(batchId)) {
      if ((await this.stop({ ...item, batchId }, reason, { moveBatch: false })) === 'stopped') ended += 1;
    }
    await this.deps.batches.closeIfDone(batchId);
    await this.deps.redis?.dispatcher.notify(batchId);
    return { going, items: ended };
  }

  /**
   * Cancels everything `owner` has queued or running: its batches (cancelBatch), then its other
   * deliberations (a queued one's job is removed first, so no worker takes it from here on).
   *
   * Without Redis (`deps.redis` null) every stop is still stored, so nothing further starts: no
   * next stage (a job of a cancelled message does nothing), no next batch item. What a worker is
   * calling at that moment runs on until it settles, at the latest at the mode's call timeout, or
   * until the worker's reconciler finds the message ended (RECONCILE_INTERVAL_MS) and aborts it.
   */
  async cancelWorkOf(owner: WorkOwner, reason: string): Promise<CancelledWork> {
    const done: CancelledWork = { deliberations: 0, batches: 0, batchItems: 0 };
    for (const batchId of await this.deps.openWork.openBatches(owner)) {
      // Counted when it was still going, or had items running (out of budget, or cancelled a moment ago).
      const { going, items } = await this.cancelBatch(batchId, reason);
      done.batchItems += items;
      if (going || items > 0) done.batches += 1;
    }
    for (const open of await this.deps.openWork.openDeliberations(owner)) {
      const stopped = await this.stop({ ...open, queued: open.status === 'queued' }, reason);
      if (stopped !== 'stopped') continue;
      if (open.batchId) done.batchItems += 1;
      else done.deliberations += 1;
    }
    return done;
  }
}

import type { BatchAccepted } from '@conclave/contracts';
import type { BatchesRepository } from './repositories/batches.repository';
import type { EventPublisher } from '@conclave/deliberation';
import type { IdempotencyKey } from './repositories/idempotency.repository';
import { KeyedSingleFlight } from './single-flight';

/** Where a dispatch hands its items, and how it says a batch moved (RedisBatchQueue, @conclave/redis). */
export interface BatchQueue {
  /** Queues the items' stages, behind interactive deliberations. */
  enqueue(items: { messageId: string; stage: string }[]): Promise<void>;
  /** Tells every gateway that the batch moved (its watchers re-read it). */
  notify(batchId: string): Promise<void>;
}

/**
 * Hands a batch's items to the queue, at most `concurrency` in flight per batch, in submission
 * order; each item that finishes makes room for the next. Safe to call from any process at any
 * time: the batch row lock serializes it.
 */
export class BatchDispatcher {
  /**
   * Items of one batch that finish together share one dispatch (it fills every free slot), so a
   * process keeps at most one transaction on a batch's row lock instead of one per finished item.
   */
  private readonly afterItems = new KeyedSingleFlight(async (batchId) => {
    // Items were started: the batch is not done.
    if ((await this.dispatch(batchId)) === 0) await this.closeIfDone(batchId);
    await this.notify(batchId);
  });

  constructor(
    private readonly batches: BatchesRepository,
    private readonly queue: BatchQueue,
    /** The process's one event publisher (EVENT_PUBLISHER). */
    private readonly events: EventPublisher,
  ) {}

  async dispatch(batchId: string): Promise<number> {
    const picked = await this.batches.pickItems(batchId);
    // Items the budget ended: their watchers see `cancelled` now (or on their next replay, if lost).
    if (picked?.cancelled?.length) await this.events.publish(picked.cancelled).catch(() => undefined);
    if (!picked || picked.items.length === 0) return 0;
    // Committed first: a lost enqueue is found by the reconciler, never a double dispatch.
    await this.queue.enqueue(picked.items.map((i) => ({ messageId: i.messageId, stage: i.stage })));
    return picked.items.length;
  }

  /**
   * A new batch's first dispatch, its idempotency key recorded in the same transaction
   * (BatchesRepository.admit: what each outcome means).
   */
  admit(batchId: string, accepted: BatchAccepted, idempotency: IdempotencyKey | null) {
    return this.batches.admit(batchId, accepted, idempotency, (items) => this.queue.enqueue(items));
  }

  /** Hands items a dispatch picked to the queue (a retry's first attempts, in its transaction). */
  enqueue(items: { messageId: string; stage: string }[]): Promise<void> {
    return this.queue.enqueue(items);
  }

  /** After one of a batch's items ended: start the next ones, close the batch when none is left. */
  itemFinished(batchId: string): Promise<void> {
    return this.afterItems.run(batchId);
  }

  async closeIfDone(batchId: string): Promise<void> {
    await this.batches.closeIfDone(batchId);
  }

  async notify(batchId: string): Promise<void> {
    await this.queue.notify(batchId).catch(() => undefined);
  }

  /** Batches whose next items were never started (a worker died between two items). */
  async reconcile(): Promise<void> {
    for (const id of await this.batches.openBatchIds()) {
      if ((await this.dispatch(id)) > 0) await this.notify(id);
      await this.closeIfDone(id);
    }
  }
}

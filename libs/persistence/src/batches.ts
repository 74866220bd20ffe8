import { batchesChannel } from '@conclave/contracts';
import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { returnedRows } from './deliberation.store';
import type { StageQueue } from '@conclave/redis';
import { KeyedSingleFlight } from './single-flight';

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
    private readonly dataSource: DataSource,
    private readonly queue: StageQueue,
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async dispatch(batchId: string): Promise<number> {
    const picked = await this.dataSource.transaction(async (manager) => {
      const [batch]: { status: string; concurrency: number; generate_titles: boolean }[] =
        await manager.query(
          // NO KEY UPDATE: dispatchers exclude each other, but the foreign-key checks of the batch's
          // messages (KEY SHARE) do not wait for them.
          'SELECT status, concurrency, generate_titles FROM batches WHERE id = $1 FOR NO KEY UPDATE',
          [batchId],
        );
      if (!batch || batch.status === 'complete' || batch.status === 'cancelled') return null;
      const [{ inflight }]: { inflight: number }[] = await manager.query(
        `SELECT COUNT(*)::int AS inflight FROM messages WHERE batch_id = $1 AND role = 'assistant'
           AND dispatched_at IS NOT NULL AND status IN ('queued', 'running')`,
        [batchId],
      );
      const slots = batch.concurrency - inflight;
      if (slots <= 0) return { items: [], title: batch.generate_titles };
      const items = returnedRows<{ id: string; stage: string }>(
        await manager.query(
          `UPDATE messages SET dispatched_at = now() WHERE id IN (
             SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND dispatched_at IS NULL
               AND status = 'queued' ORDER BY batch_index LIMIT $2)
           RETURNING id, stage`,
          [batchId, slots],
        ),
      );
      if (items.length > 0) {
        await manager.query(
          `UPDATE batches SET status = 'running', started_at = COALESCE(started_at, now()) WHERE id = $1 AND status = 'queued'`,
          [batchId],
        );
      }
      return { items, title: batch.generate_titles };
    });
    if (!picked || picked.items.length === 0) return 0;
    // Committed first: a lost enqueue is found by the reconciler, never a double dispatch.
    await this.queue.enqueueMany(
      picked.items.map((i) => ({ messageId: i.id, stage: i.stage, title: picked.title })),
      { background: true },
    );
    return picked.items.length;
  }

  /** After one of a batch's items ended: start the next ones, close the batch when none is left. */
  itemFinished(batchId: string): Promise<void> {
    return this.afterItems.run(batchId);
  }

  async closeIfDone(batchId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE batches SET status = CASE WHEN status = 'cancelled' THEN status ELSE 'complete' END,
         finished_at = now()
       WHERE id = $1 AND finished_at IS NULL AND NOT EXISTS (
         SELECT 1 FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status IN ('queued', 'running'))`,
      [batchId],
    );
  }

  async notify(batchId: string): Promise<void> {
    await this.redis.publish(batchesChannel(this.prefix), batchId).catch(() => undefined);
  }

  /** Batches whose next items were never started (a worker died between two items). */
  async reconcile(): Promise<void> {
    const open: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM batches WHERE status IN ('queued', 'running') ORDER BY created_at LIMIT 200`,
    );
    for (const { id } of open) {
      if ((await this.dispatch(id)) > 0) await this.notify(id);
      await this.closeIfDone(id);
    }
  }
}

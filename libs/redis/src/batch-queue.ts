import { batchesChannel } from '@conclave/contracts';
import type { RedisClient } from './connection';
import type { StageQueue } from './stage-queue';

/**
 * The Redis side of a batch's dispatch (BatchDispatcher in @conclave/persistence picks the items
 * under the batch's row lock): the items onto the stage queue, behind interactive deliberations,
 * and a word to every gateway on the batches channel that the batch moved (its watchers re-read it).
 */
export class RedisBatchQueue {
  constructor(
    private readonly queue: StageQueue,
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  enqueue(items: { messageId: string; stage: string }[]): Promise<void> {
    return this.queue.enqueueMany(items, { background: true });
  }

  async notify(batchId: string): Promise<void> {
    await this.redis.publish(batchesChannel(this.prefix), batchId);
  }
}

import { batchesChannel } from '@conclave/contracts';
import { RedisBatchQueue } from './batch-queue';
import type { RedisClient } from './connection';
import { announceRevokedKeys, revokedKeysChannel } from './revoked-keys';
import type { StageQueue } from './stage-queue';

/** What the Redis side of a batch dispatch and a key revocation send, on fakes (no Redis). */
describe('the Redis side of batches and revocations', () => {
  const published: [string, string][] = [];
  const redis = {
    publish: async (channel: string, message: string) => {
      published.push([channel, message]);
      return 1;
    },
  } as unknown as RedisClient;
  beforeEach(() => published.splice(0));

  it('queues a dispatch behind interactive deliberations, and tells the gateways the batch moved', async () => {
    const enqueued: unknown[] = [];
    const queue = {
      enqueueMany: async (items: unknown, options: unknown) => {
        enqueued.push([items, options]);
      },
    } as unknown as StageQueue;
    const batches = new RedisBatchQueue(queue, redis, 'p');
    await batches.enqueue([{ messageId: 'm1', stage: 'stage1' }]);
    expect(enqueued).toEqual([[[{ messageId: 'm1', stage: 'stage1' }], { background: true }]]);
    await batches.notify('b1');
    expect(published).toEqual([[batchesChannel('p'), 'b1']]);
  });

  it('announces revoked keys on their channel as { keyIds }', async () => {
    await announceRevokedKeys(redis, 'p', ['k1', 'k2']);
    expect(revokedKeysChannel('p')).toBe('p:api-keys:revoked');
    expect(published).toEqual([['p:api-keys:revoked', '{"keyIds":["k1","k2"]}']]);
  });
});

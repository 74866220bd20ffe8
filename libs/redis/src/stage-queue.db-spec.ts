import { randomBytes } from 'node:crypto';
import { STAGE_QUEUE_DEFINITION, stageJobId } from '@conclave/contracts';
import { Worker } from 'bullmq';
import IORedis, { type Redis } from 'ioredis';
import { StageQueue } from './stage-queue';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('StageQueue.rescheduleStage (real Redis)', () => {
  const prefixes: string[] = [];
  const queues: StageQueue[] = [];
  let redis: Redis;

  beforeAll(() => {
    redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
  });

  afterAll(async () => {
    await Promise.all(queues.map((q) => q.close()));
    for (const prefix of prefixes) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
  });

  /** A stage queue of its own (its own key prefix) for one test. */
  const fresh = () => {
    const prefix = `t-stages-${randomBytes(5).toString('hex')}`;
    prefixes.push(prefix);
    const stages = new StageQueue(redis, prefix, { attempts: 1 });
    queues.push(stages);
    const stateOf = async (messageId: string, stage: string) =>
      (await stages.queue.getJob(stageJobId(messageId, stage)))?.getState() ?? 'no job';
    const jobKey = (messageId: string, stage: string) =>
      `${prefix}:${STAGE_QUEUE_DEFINITION.name}:${stageJobId(messageId, stage)}`;
    return { prefix, stages, stateOf, jobKey };
  };

  it('queues again a stage whose job outlived the lists that held it (Redis lost part of the queue)', async () => {
    const { prefix, stages, stateOf, jobKey } = fresh();
    await stages.enqueueStage('m1', 'round_2');
    expect(await stateOf('m1', 'round_2')).toBe('waiting');
    // Every key of the queue but the job's own hash goes: its wait list, the queue's meta, its
    // marker. A wipe that races an enqueue leaves this (the hash written after the keys to delete
    // were listed), as can an eviction: BullMQ then knows the job in no state at all.
    const keys = (await redis.keys(`${prefix}:*`)).filter((key) => key !== jobKey('m1', 'round_2'));
    expect(keys.length).toBeGreaterThan(0);
    await redis.del(...keys);
    expect(await stateOf('m1', 'round_2')).toBe('unknown');
    expect(await stages.stageJobState('m1', 'round_2')).toBe('missing');

    await stages.rescheduleStage('m1', 'round_2');

    // Queued for real, where a worker takes it. BullMQ's add ignores a job id whose hash exists:
    // without the orphan removed first, this was a no-op that every reconcile pass repeated.
    expect(await stateOf('m1', 'round_2')).toBe('waiting');
    expect((await stages.queue.getWaiting()).map((job) => job.id)).toEqual([stageJobId('m1', 'round_2')]);
  });

  it('queues again a stage whose finished job is still kept, and leaves a waiting one alone', async () => {
    const { prefix, stages, stateOf } = fresh();
    await stages.enqueueStage('m-kept', 'stage1');
    // Completed as a worker completes it, under a lock of its own.
    const connection = redis.duplicate({ maxRetriesPerRequest: null });
    const worker = new Worker(STAGE_QUEUE_DEFINITION.name, null, {
      connection,
      prefix,
      autorun: false,
    });
    try {
      const job = await worker.getNextJob('token-1');
      expect(job?.id).toBe(stageJobId('m-kept', 'stage1'));
      await job?.moveToCompleted('done', 'token-1', false);
    } finally {
      await worker.close();
      connection.disconnect();
    }
    await stages.enqueueStage('m-waiting', 'stage1');
    expect(await stateOf('m-kept', 'stage1')).toBe('completed');

    await stages.rescheduleStage('m-kept', 'stage1');
    await stages.rescheduleStage('m-waiting', 'stage1');

    expect(await stateOf('m-kept', 'stage1')).toBe('waiting');
    expect(await stateOf('m-waiting', 'stage1')).toBe('waiting');
    expect(await stages.queue.getWaitingCount()).toBe(2);
  });
});

import { JOB_NAMES, STAGE_QUEUE_DEFINITION, stageJobId } from '@conclave/contracts';
import { Queue } from 'bullmq';
import { EventEmitter } from 'node:events';
import { StageQueue } from './stage-queue';

/**
 * A BullMQ Queue that never connects: `add` records instead. What the gateway's queue is, as far
 * as StageQueue is concerned (it is registered with @nestjs/bullmq and handed over).
 */
function offlineQueue(name: string): Queue & { added: unknown[][] } {
  const queue = Object.create(Queue.prototype) as Queue & { added: unknown[][] };
  EventEmitter.call(queue);
  Object.defineProperty(queue, 'name', { value: name });
  queue.added = [];
  queue.add = (async (...args: unknown[]) => {
    queue.added.push(args);
  }) as unknown as Queue['add'];
  return queue;
}

describe('StageQueue over a Queue registered elsewhere', () => {
  it('adds to that queue with the same job options as its own', async () => {
    const queue = offlineQueue(STAGE_QUEUE_DEFINITION.name);
    const stages = new StageQueue(queue, { attempts: 3 });
    expect(stages.queue).toBe(queue);
    await stages.enqueueStage('m1', 'stage1', { background: true });
    expect(queue.added).toEqual([
      [
        JOB_NAMES.stage,
        { messageId: 'm1', stage: 'stage1' },
        {
          jobId: stageJobId('m1', 'stage1'),
          priority: 10,
          attempts: 3,
          backoff: { type: 'exponential', delay: 1000 },
          removeOnComplete: { age: 3600, count: 5000 },
          removeOnFail: { age: 7 * 24 * 3600 },
        },
      ],
    ]);
  });

  it("hears the queue's errors through onError", () => {
    const heard: unknown[] = [];
    const queue = offlineQueue(STAGE_QUEUE_DEFINITION.name);
    new StageQueue(queue, { attempts: 1, onError: (error) => heard.push(error) });
    queue.emit('error', new Error('lost'));
    expect(heard).toEqual([new Error('lost')]);
  });

  it('refuses a queue of another name', () => {
    expect(() => new StageQueue(offlineQueue('data-lifecycle'), { attempts: 1 })).toThrow(
      `StageQueue needs the queue "${STAGE_QUEUE_DEFINITION.name}", not "data-lifecycle"`,
    );
  });
});

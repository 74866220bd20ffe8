import type { DeliveredEvent } from '@conclave/contracts';
import { MemoryStore } from '../testing/memory-store';
import { Resumer, resumedEvent } from './resume';
import type { EnqueueOptions, StageJobState, StageScheduler, UnfinishedMessage } from './types';

class Scheduler implements StageScheduler {
  state: StageJobState = 'missing';
  readonly calls: string[] = [];
  async enqueueStage(messageId: string, stage: string): Promise<void> {
    this.calls.push(`enqueue ${messageId} ${stage}`);
  }
  async stageJobState(): Promise<StageJobState> {
    return this.state;
  }
  async rescheduleStage(messageId: string, stage: string, options?: EnqueueOptions): Promise<void> {
    this.calls.push(`reschedule ${messageId} ${stage}${options?.background ? ' background' : ''}`);
  }
}

/** A store whose one deliberation is unfinished (MemoryStore reports none). */
class Unfinished extends MemoryStore {
  override async unfinishedMessages(): Promise<UnfinishedMessage[]> {
    return this.state.status === 'queued' || this.state.status === 'running'
      ? [{ messageId: this.state.messageId, stage: this.state.stage ?? '', batchId: null }]
      : [];
  }
}

function setup() {
  const store = new Unfinished('Q?', {}, { status: 'running', stage: 'stage2' });
  const scheduler = new Scheduler();
  const published: DeliveredEvent[] = [];
  const resumer = new Resumer(store, scheduler, {
    publish: async (events) => {
      published.push(...events);
    },
  });
  const failed: string[] = [];
  const options = {
    idleMs: 0,
    reason: 'queue_lost' as const,
    tag: 'e1',
    running: () => false,
    failed: async (messageId: string, stage: string) => {
      failed.push(`${messageId} ${stage}`);
    },
  };
  return { store, scheduler, published, resumer, failed, options };
}

describe('Resumer', () => {
  it('the resumed event names the stage and the reason in a sentence', () => {
    expect(resumedEvent('stage2', 'worker_lost', '1')).toEqual({
      key: 'resumed:stage2:worker_lost:1',
      type: 'resumed',
      payload: {
        stage: 'stage2',
        reason: 'worker_lost',
        message: expect.stringMatching(/stage2 stopped; another worker is resuming it/),
      },
    });
  });

  it('queues again a stage whose job is gone, said first, once per fault', async () => {
    const { store, scheduler, published, resumer, options } = setup();
    expect(await resumer.resumeLost(options)).toBe(1);
    expect(scheduler.calls).toEqual(['reschedule m1 stage2']);
    expect(published.map((e) => [e.type, e.reason])).toEqual([['resumed', 'queue_lost']]);
    // A second worker, or a second pass, finding the same loss: queued again (idempotent), said once.
    await resumer.resumeLost(options);
    expect(store.events.filter((e) => e.type === 'resumed')).toHaveLength(1);
  });

  it('leaves alone a stage a live worker runs, a job still pending, and an ended deliberation', async () => {
    const running = setup();
    expect(await running.resumer.resumeLost({ ...running.options, running: () => true })).toBe(0);
    const pending = setup();
    pending.scheduler.state = 'pending';
    expect(await pending.resumer.resumeLost(pending.options)).toBe(0);
    for (const { scheduler, published } of [running, pending]) {
      expect(scheduler.calls).toEqual([]);
      expect(published).toEqual([]);
    }
    const ended = setup();
    ended.store.state.status = 'complete';
    expect(await ended.resumer.announce('m1', 'stage2', 'stalled', 'x')).toBe(false);
  });

  it('says nothing for a stage the deliberation has moved past', async () => {
    const { store, resumer } = setup();
    expect(await resumer.announce('m1', 'stage1', 'worker_lost', '1')).toBe(false);
    expect(store.events).toEqual([]);
  });

  it('closes a deliberation whose stage job failed for good', async () => {
    const { scheduler, resumer, failed, options } = setup();
    scheduler.state = 'failed';
    expect(await resumer.resumeLost(options)).toBe(1);
    expect(failed).toEqual(['m1 stage2']);
    expect(scheduler.calls).toEqual([]);
  });
});

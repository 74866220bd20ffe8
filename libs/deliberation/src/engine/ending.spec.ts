import { endingEvent, endingUpdate, endingWrite, endRun, type DeliberationEnd } from './ending';
import type { StageWrite, StageWriteResult } from './types';

const cancelled: DeliberationEnd = { kind: 'cancelled', reason: 'Cancelled by the user.' };
const failed: DeliberationEnd = {
  kind: 'failed',
  message: 'The deliberation ran past its 600 s limit and was stopped.',
};

describe('the ending of a run (one way, issue 35)', () => {
  it('is one event, the final status and error, no further stage: the write stored before', () => {
    expect(endingWrite('stage2', cancelled)).toEqual({
      stage: 'stage2',
      events: [{ key: 'cancelled', type: 'cancelled', payload: { reason: 'Cancelled by the user.' } }],
      update: { status: 'cancelled', stage: null, error: 'Cancelled by the user.', completed: true },
    });
    expect(endingWrite(null, failed)).toEqual({
      stage: 'failure',
      events: [{ key: 'error', type: 'error', payload: { message: failed.message } }],
      update: { status: 'failed', stage: null, error: failed.message, completed: true },
    });
    expect(endingWrite(null, cancelled).stage).toBe('cancelled');
    // A stage's own failure, written with its commit, ends with the same event and move.
    expect(endingEvent(failed)).toEqual(endingWrite('stage1', failed).events[0]);
    expect(endingUpdate(failed)).toEqual(endingWrite('stage1', failed).update);
  });

  it('is written by endRun through the store, which answers', async () => {
    const writes: [string, StageWrite][] = [];
    const answers: StageWriteResult[] = [{ kind: 'written', events: [] }, { kind: 'skipped' }];
    const store = {
      writeStage: (messageId: string, write: StageWrite) => {
        writes.push([messageId, write]);
        return Promise.resolve(answers[writes.length - 1]);
      },
    };
    expect(await endRun(store, 'm1', 'stage3', cancelled)).toEqual({ kind: 'written', events: [] });
    expect(await endRun(store, 'm1', null, failed)).toEqual({ kind: 'skipped' });
    expect(writes).toEqual([
      ['m1', endingWrite('stage3', cancelled)],
      ['m1', endingWrite(null, failed)],
    ]);
  });
});

import type { DeliveredEvent } from '@conclave/contracts';
import { applyEvent, emptyTimeline } from '../src/timeline';

let seq = 0;
const event = (type: string, fields: Record<string, unknown> = {}): DeliveredEvent => ({
  type,
  messageId: 'm',
  seq: ++seq,
  at: '2026-11-22T00:00:00.000Z',
  ...fields,
});
const progress = (stage: string, participant: string, state: string, extra: Record<string, unknown> = {}) =>
  event('model_progress', { stage, participant, state, ...extra });

describe('timeline', () => {
  it('follows each call through its states, per stage, in arrival order', () => {
    const events = [
      progress('stage1', 'sim/a', 'started'),
      progress('stage1', 'sim/b', 'started'),
      progress('stage1', 'sim/a', 'retrying', { error: 'rate limited' }),
      progress('stage1', 'sim/a', 'succeeded', { responseTimeMs: 420 }),
      progress('stage1', 'sim/b', 'failed', { error: 'timed out' }),
      progress('stage2', 'sim/a', 'started'),
    ];
    const state = events.reduce(applyEvent, emptyTimeline());
    expect(state.stages.map((s) => s.name)).toEqual(['stage1', 'stage2']);
    expect(state.stages[0].participants).toEqual([
      { id: 'sim/a', state: 'done', retries: 1, responseTimeMs: 420, error: 'rate limited' },
      { id: 'sim/b', state: 'failed', retries: 0, error: 'timed out' },
    ]);
    expect(state.stages[1].participants).toEqual([{ id: 'sim/a', state: 'answering', retries: 0 }]);
    expect(state.events).toHaveLength(6);
    expect(state.finished).toBeNull();
  });

  it('ends on complete or on error with its message', () => {
    expect(applyEvent(emptyTimeline(), event('complete')).finished).toBe('complete');
    const failed = applyEvent(emptyTimeline(), event('error', { message: 'All models failed to respond' }));
    expect(failed).toMatchObject({ finished: 'error', error: 'All models failed to respond' });
  });

  it('does not change the state it was given', () => {
    const before = emptyTimeline();
    applyEvent(before, progress('stage1', 'sim/a', 'started'));
    expect(before).toEqual(emptyTimeline());
  });
});

import type { DeliveredEvent } from '@conclave/contracts';
import { describeModeEvent, ProgressTracker, type ProgressUpdate } from './progress';

let seq = 0;
const event = (type: string, payload: Record<string, unknown> = {}): DeliveredEvent => ({
  type,
  messageId: 'm1',
  seq: ++seq,
  at: '2025-01-01T00:00:00.000Z',
  ...payload,
});
const call = (
  stage: string,
  participant: string | number,
  state: string,
  extra: Record<string, unknown> = {},
) => event('model_progress', { stage, participant, state, ...extra });

describe('MCP progress wording', () => {
  it('says per settled call who answered or failed, with the stage count', () => {
    const tracker = new ProgressTracker(7, 0);
    expect(tracker.onEvent(event('stage1_start', { conversationId: 'c', messageId: 'm1' }))?.message).toBe(
      'stage1 started',
    );
    for (const model of ['sim/athena', 'sim/hermes', 'sim/x:fail'])
      expect(tracker.onEvent(call('stage1', model, 'started'))).toBeNull();
    expect(tracker.onEvent(call('stage1', 'sim/athena', 'succeeded', { content: 'A' }))?.message).toBe(
      'stage1: sim/athena answered (1/3)',
    );
    expect(
      tracker.onEvent(call('stage1', 'sim/x:fail', 'failed', { error: 'The model refused' }))?.message,
    ).toBe('stage1: sim/x:fail failed (2/3): The model refused');
    expect(tracker.onEvent(call('stage1', 'sim/hermes', 'retrying', { error: 'HTTP 503' }))?.message).toBe(
      'stage1: sim/hermes retrying (HTTP 503)',
    );
    expect(tracker.onEvent(call('stage1', 'sim/hermes', 'succeeded'))?.message).toBe(
      'stage1: sim/hermes answered (3/3)',
    );
  });

  it('keeps anonymous participants anonymous: an index is never turned into a model', () => {
    const tracker = new ProgressTracker(null, 0);
    tracker.onEvent(call('round_1', 2, 'started'));
    tracker.onEvent(call('round_1', 1, 'started'));
    expect(tracker.heartbeat(4000).message).toBe(
      'still deliberating (4 s): round 1 waiting for participant #2, participant #1',
    );
    expect(tracker.onEvent(call('round_1', 2, 'succeeded', { content: '42' }))?.message).toBe(
      'round 1: participant #2 answered (1/2)',
    );
    const stats = { median: 42, mean: 40, cv: 0.123, min: 1, max: 50 };
    expect(describeModeEvent(event('round_complete', { round: 1, data: { estimates: [], stats } }))).toBe(
      'round 1 complete: median 42, cv 0.12',
    );
  });

  it('describes each mode event it knows, and any other stage event plainly', () => {
    expect(describeModeEvent(event('jury_start', { mode: 'jury' }))).toBeNull();
    expect(describeModeEvent(event('vote_session_start'))).toBeNull();
    expect(describeModeEvent(event('present_start'))).toBe('present started');
    expect(describeModeEvent(event('stage1_complete', { data: [{}, {}, {}] }))).toBe(
      'stage1 complete: 3 answers',
    );
    expect(
      describeModeEvent(
        event('stage2_complete', {
          data: [],
          metadata: { aggregateRankings: [{ model: 'sim/athena', averageRank: 1.333 }], label_to_model: {} },
        }),
      ),
    ).toBe('stage2 complete: average ranks sim/athena 1.33');
    expect(
      describeModeEvent(event('stage3_complete', { data: { model: 'sim/chairman', response: 'x' } })),
    ).toBe('stage3 complete: synthesis by sim/chairman');
    expect(
      describeModeEvent(
        event('winner_declared', {
          data: { winnerLabel: 'Response B', winnerModel: 'sim/apollo', voteCount: 2, totalVotes: 3 },
        }),
      ),
    ).toBe('winner: sim/apollo (Response B, 2/3 votes)');
    expect(describeModeEvent(event('error', { message: 'The chairman failed' }))).toBe(
      'failed: The chairman failed',
    );
    expect(describeModeEvent(event('cancelled', { reason: 'Cancelled by the user.' }))).toBe(
      'cancelled: Cancelled by the user.',
    );
    expect(describeModeEvent(event('resumed', { stage: 'stage2', reason: 'queue_lost', message: 'x' }))).toBe(
      'resuming stage2 (the job queue lost it)',
    );
    // A payload of another shape than documented: still a line, never a throw.
    expect(describeModeEvent(event('stage2_complete', { data: [] }))).toBe('stage2 complete');
    expect(describeModeEvent(event('something_else'))).toBeNull();
  });
});

describe('MCP progress values', () => {
  it('increase with every notification, count settled calls and never pass the total', () => {
    const tracker = new ProgressTracker(3, 0);
    const updates: ProgressUpdate[] = [];
    const push = (update: ProgressUpdate | null) => {
      if (update) updates.push(update);
    };
    expect(tracker.note('started').total).toBe(4);
    push(tracker.onEvent(event('stage1_start')));
    for (const model of ['a/1', 'a/2']) push(tracker.onEvent(call('stage1', model, 'started')));
    for (let i = 0; i < 50; i++) push(tracker.heartbeat(i * 5000));
    push(tracker.onEvent(call('stage1', 'a/1', 'succeeded')));
    push(tracker.heartbeat(300_000));
    push(tracker.onEvent(call('stage1', 'a/2', 'succeeded')));
    push(tracker.onEvent(event('stage1_complete', { data: [{}, {}] })));
    push(tracker.onEvent(call('stage3', 'a/3', 'succeeded')));
    // More calls than the plan said (it cannot know every retry of a mode): the total follows.
    push(tracker.onEvent(call('stage3', 'a/4', 'failed')));
    push(tracker.onEvent(event('complete')));

    for (let i = 1; i < updates.length; i++)
      expect(updates[i].progress).toBeGreaterThan(updates[i - 1].progress);
    for (const update of updates) expect(update.progress).toBeLessThanOrEqual(update.total ?? Infinity);
    const settled = updates.filter((u) => / (answered|failed) /.test(u.message));
    expect(settled.map((u) => u.progress)).toEqual([1, 2, 3, 4]);
    // The end is a step of its own, the last one.
    expect(updates.at(-1)).toEqual({ progress: 5, total: 5, message: 'complete' });
  });

  it('gives no total when the plan is unknown', () => {
    const tracker = new ProgressTracker(null, 0);
    expect(tracker.note('started')).toEqual({ progress: 0.5, message: 'started' });
    expect(tracker.heartbeat(12_400)).toEqual({ progress: 2 / 3, message: 'still deliberating (12 s)' });
  });

  it('leaves the title call out', () => {
    const tracker = new ProgressTracker(2, 0);
    expect(tracker.onEvent(call('title', 'sim/chairman', 'succeeded'))).toBeNull();
  });
});

describe('MCP progress at the end', () => {
  it('reaches the total when every planned call settled and the run completed', () => {
    const tracker = new ProgressTracker(2, 0);
    tracker.onEvent(call('stage1', 'a/1', 'succeeded'));
    tracker.onEvent(call('stage3', 'a/2', 'succeeded'));
    expect(tracker.onEvent(event('stage3_complete', { data: { model: 'a/2' } }))).toMatchObject({
      progress: 2.5,
      total: 3,
    });
    expect(tracker.onEvent(event('title_complete', { data: { title: 't' } }))).toMatchObject({ total: 3 });
    expect(tracker.onEvent(event('complete'))).toEqual({ progress: 3, total: 3, message: 'complete' });
  });

  it('ends short of the total when the run fails early', () => {
    const tracker = new ProgressTracker(7, 0);
    tracker.onEvent(call('stage1', 'a/1', 'failed', { error: 'x' }));
    expect(tracker.onEvent(event('error', { message: 'Too few answers' }))).toEqual({
      progress: 2,
      total: 8,
      message: 'failed: Too few answers',
    });
  });
});

import type { DeliveredEvent, LiveEvent } from '@conclave/contracts';
import { applyEvent, applyLive, emptyTimeline, type TimelineState } from '../src/timeline';

let seq = 0;
const AT = '2026-11-22T00:00:00.000Z';
const event = (type: string, fields: Record<string, unknown> = {}, at = AT): DeliveredEvent => ({
  type,
  messageId: 'm',
  seq: ++seq,
  at,
  ...fields,
});
const progress = (
  stage: string,
  participant: string | number,
  state: string,
  extra: Record<string, unknown> = {},
  at = AT,
) => event('model_progress', { stage, participant, state, ...extra }, at);
const delta = (participant: string | number, offset: number, text: string, stage = 'stage1'): LiveEvent => ({
  type: 'model_delta',
  messageId: 'm',
  stage,
  participant,
  model: typeof participant === 'number' ? null : participant,
  text,
  offset,
});
const partial = (participant: string, text: string, stage = 'stage1'): LiveEvent => ({
  type: 'model_partial',
  messageId: 'm',
  stage,
  participant,
  model: participant,
  text,
});

/** Stored events and live pieces, in the order they arrive. */
const fold = (items: (DeliveredEvent | LiveEvent)[], from: TimelineState = emptyTimeline()) =>
  items.reduce<TimelineState>(
    (state, item) => ('seq' in item ? applyEvent(state, item) : applyLive(state, item)),
    from,
  );
const call = (state: TimelineState, stage: string, id: string) =>
  state.stages.find((s) => s.name === stage)?.participants.find((p) => p.id === id);

describe('timeline', () => {
  it('follows each call through its states, per stage, in arrival order', () => {
    const events = [
      progress('stage1', 'sim/a', 'started', {}, '2026-11-22T00:00:01.000Z'),
      progress('stage1', 'sim/b', 'started'),
      progress('stage1', 'sim/a', 'retrying', { error: 'rate limited' }),
      progress('stage1', 'sim/a', 'succeeded', { responseTimeMs: 420 }, '2026-11-22T00:00:02.000Z'),
      progress('stage1', 'sim/b', 'failed', { error: 'timed out' }),
      progress('stage2', 'sim/a', 'started'),
    ];
    const state = events.reduce(applyEvent, emptyTimeline());
    expect(state.stages.map((s) => s.name)).toEqual(['stage1', 'stage2']);
    const common = { text: '', final: false, truncated: false };
    expect(state.stages[0].participants).toEqual([
      {
        id: 'sim/a',
        label: 'sim/a',
        state: 'done',
        retries: 1,
        responseTimeMs: 420,
        error: 'rate limited',
        startedAt: '2026-11-22T00:00:01.000Z',
        settledAt: '2026-11-22T00:00:02.000Z',
        ...common,
      },
      {
        id: 'sim/b',
        label: 'sim/b',
        state: 'failed',
        retries: 0,
        error: 'timed out',
        startedAt: AT,
        settledAt: AT,
        ...common,
      },
    ]);
    expect(state.stages[1].participants).toEqual([
      { id: 'sim/a', label: 'sim/a', state: 'answering', retries: 0, startedAt: AT, ...common },
    ]);
    expect(state.events).toHaveLength(6);
    expect(state.finished).toBeNull();
  });

  it('ends on complete or on error with its message', () => {
    expect(applyEvent(emptyTimeline(), event('complete'))).toMatchObject({
      finished: 'complete',
      endedAt: AT,
    });
    const failed = applyEvent(emptyTimeline(), event('error', { message: 'All models failed to respond' }));
    expect(failed).toMatchObject({ finished: 'error', error: 'All models failed to respond', endedAt: AT });
  });

  it('does not change the state it was given', () => {
    const before = emptyTimeline();
    applyEvent(before, progress('stage1', 'sim/a', 'started'));
    applyLive(before, delta('sim/a', 0, 'Hi'));
    expect(before).toEqual(emptyTimeline());
  });
});

describe('answers as they are written', () => {
  it('stitches pieces by offset: once each, overlaps trimmed, gaps left out', () => {
    const state = fold([
      progress('stage1', 'sim/a', 'started'),
      delta('sim/a', 0, 'The answer'),
      delta('sim/a', 10, ' is'),
      delta('sim/a', 10, ' is'), // a duplicate
      delta('sim/a', 7, 'wer is forty'), // overlaps what is there
      delta('sim/a', 40, 'lost'), // after a gap
      delta('sim/a', 19, '-two'),
    ]);
    expect(call(state, 'stage1', 'sim/a')).toMatchObject({
      state: 'answering',
      text: 'The answer is forty-two',
      final: false,
    });
  });

  it('starts again from the answer so far that a (re)subscription sends', () => {
    const state = fold([
      delta('sim/a', 0, 'Draft one'),
      partial('sim/a', 'The answer so'),
      delta('sim/a', 13, ' far'),
    ]);
    expect(call(state, 'stage1', 'sim/a')?.text).toBe('The answer so far');
  });

  it('shows a call that writes before its started event arrives', () => {
    const state = fold([delta('sim/a', 0, 'Early')]);
    expect(call(state, 'stage1', 'sim/a')).toMatchObject({ state: 'answering', text: 'Early' });
    expect(call(fold([progress('stage1', 'sim/a', 'started')], state), 'stage1', 'sim/a')).toMatchObject({
      state: 'answering',
      text: 'Early',
      startedAt: AT,
    });
  });

  it('replaces the streamed text with the answer as stored when the call succeeds, truncated or not', () => {
    const state = fold([
      delta('sim/a', 0, 'The answr'),
      delta('sim/b', 0, 'Bravo'),
      progress('stage1', 'sim/a', 'succeeded', { responseTimeMs: 9, content: 'The answer.' }),
      progress('stage1', 'sim/b', 'succeeded', {
        responseTimeMs: 9,
        content: 'Bravo, but cut',
        truncated: true,
      }),
      delta('sim/a', 9, 'late piece'),
    ]);
    expect(call(state, 'stage1', 'sim/a')).toMatchObject({
      state: 'done',
      text: 'The answer.',
      final: true,
      truncated: false,
    });
    expect(call(state, 'stage1', 'sim/b')).toMatchObject({
      text: 'Bravo, but cut',
      final: true,
      truncated: true,
    });
  });

  it('starts a retried call from nothing', () => {
    const state = fold([
      delta('sim/a', 0, 'Half'),
      progress('stage1', 'sim/a', 'retrying', { error: '503' }),
    ]);
    expect(call(state, 'stage1', 'sim/a')).toMatchObject({ state: 'retried', text: '' });
    expect(call(fold([delta('sim/a', 0, 'Again')], state), 'stage1', 'sim/a')?.text).toBe('Again');
  });

  it('names anonymous participants by their number', () => {
    const state = fold([progress('round_1', 2, 'started'), delta(2, 0, 'About 40 million', 'round_1')]);
    expect(call(state, 'round_1', '2')).toMatchObject({ label: 'Panelist 2', text: 'About 40 million' });
  });

  it('keeps every answer that arrived, the partial ones stopped, when the deliberation is cancelled', () => {
    const cancelledAt = '2026-11-22T00:00:05.000Z';
    const state = fold([
      progress('stage1', 'sim/a', 'started'),
      progress('stage1', 'sim/b', 'started'),
      progress('stage1', 'sim/c', 'started'),
      delta('sim/a', 0, 'Alpha was saying'),
      progress('stage1', 'sim/b', 'succeeded', { responseTimeMs: 800, content: 'Bravo, whole.' }),
      event('cancelled', { reason: 'Cancelled by the user.' }, cancelledAt),
      delta('sim/a', 16, ' more'),
    ]);
    expect(state).toMatchObject({
      finished: 'cancelled',
      error: 'Cancelled by the user.',
      endedAt: cancelledAt,
    });
    expect(call(state, 'stage1', 'sim/a')).toMatchObject({
      state: 'stopped',
      text: 'Alpha was saying',
      final: false,
      settledAt: cancelledAt,
    });
    expect(call(state, 'stage1', 'sim/b')).toMatchObject({
      state: 'done',
      text: 'Bravo, whole.',
      final: true,
    });
    expect(call(state, 'stage1', 'sim/c')).toMatchObject({ state: 'stopped', text: '' });
  });

  it('keeps partial answers when the deliberation fails too', () => {
    const state = fold([delta('sim/a', 0, 'Alpha'), event('error', { message: 'Deliberation timed out' })]);
    expect(state).toMatchObject({ finished: 'error', error: 'Deliberation timed out' });
    expect(call(state, 'stage1', 'sim/a')).toMatchObject({ state: 'stopped', text: 'Alpha' });
  });

  it('returns the same state for a piece that changes nothing, so nothing renders again', () => {
    const state = fold([delta('sim/a', 0, 'Alpha')]);
    expect(applyLive(state, delta('sim/a', 0, 'Alpha'))).toBe(state);
    const done = fold([progress('stage1', 'sim/a', 'succeeded', { content: 'Alpha.' })], state);
    expect(applyLive(done, delta('sim/a', 5, '!'))).toBe(done);
  });

  it('says that a stage resumes after a fault, in a line, until the end', () => {
    const resumed = fold([
      progress('stage1', 'sim/a', 'started'),
      event('resumed', {
        stage: 'stage1',
        reason: 'worker_lost',
        message: 'The worker running stage1 stopped.',
      }),
    ]);
    expect(resumed.resumed).toBe('Resuming stage1 (the worker running it stopped).');
    expect(resumed.finished).toBeNull();
    expect(call(resumed, 'stage1', 'sim/a')?.state).toBe('answering');
    expect(applyEvent(resumed, event('complete')).finished).toBe('complete');
  });
});

import { compareRecordings, differences } from './compare';
import { orderEvents, sortConcurrent, withCallsSorted, withOrdinals, withoutClock } from './normalize';

const A = '0f8fad5b-d9cb-469f-a165-70867728950e';
const B = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

describe('replay normalization', () => {
  it('numbers ids by first appearance, the same id the same number, in text too', () => {
    expect(withOrdinals({ messageId: A, list: [B, `see ${A}`], [B]: 1 })).toEqual({
      list: ['#1', 'see #2'],
      messageId: '#2',
      '#1': 1,
    });
  });

  it('drops the clock: times and durations, not configured numbers nor a null', () => {
    expect(
      withoutClock(
        {
          at: '2026-01-01T00:00:00.000Z',
          created_at: new Date(),
          completed_at: null,
          responseTimeMs: 12,
          response_time_ms: 9,
          timeoutMs: 1000,
          text: 'stored 2026-11-28 07:14:31.123+00 at http://127.0.0.1:4000/x',
        },
        'http://127.0.0.1:4000',
      ),
    ).toEqual({
      at: '<time>',
      created_at: '<time>',
      completed_at: null,
      responseTimeMs: '<ms>',
      response_time_ms: '<ms>',
      timeoutMs: 1000,
      text: 'stored <time> at <base>/x',
    });
  });

  it('sorts concurrent items by content, whatever their ids', () => {
    const x = { model: 'b', id: A };
    const y = { model: 'a', id: B };
    expect(sortConcurrent([x, y])).toEqual([y, x]);
    expect(
      sortConcurrent([
        { model: 'b', id: B },
        { model: 'a', id: A },
      ]).map((c) => c.model),
    ).toEqual(['a', 'b']);
  });

  it("sorts runs of concurrent events only, keeping the mode's own events in place", () => {
    const events = [
      { type: 'stage1_start' },
      { type: 'model_progress', participant: 'b' },
      { type: 'model_progress', participant: 'a' },
      { type: 'stage1_complete' },
      { type: 'juror_complete', juror: 2 },
      { type: 'juror_complete', juror: 1 },
    ];
    expect(orderEvents(events).map((e) => `${e.type}:${e.participant ?? e.juror ?? ''}`)).toEqual([
      'stage1_start:',
      'model_progress:a',
      'model_progress:b',
      'stage1_complete:',
      'juror_complete:1',
      'juror_complete:2',
    ]);
  });

  it('sorts the calls of a stage, keeping the stages in order', () => {
    const view = {
      calls: [
        { stage: 'stage1', model: 'b' },
        { stage: 'stage1', model: 'a' },
        { stage: 'stage2', model: 'z' },
        { stage: 'stage2', model: 'c' },
        { stage: 'stage3', model: 'a' },
      ],
    };
    expect((withCallsSorted(view) as typeof view).calls.map((c) => `${c.stage}:${c.model}`)).toEqual([
      'stage1:a',
      'stage1:b',
      'stage2:c',
      'stage2:z',
      'stage3:a',
    ]);
  });
});

describe('replay comparison', () => {
  it('names each differing path with both values', () => {
    expect(differences({ a: [1, 2], b: { c: 'x' } }, { a: [1, 3, 4], b: {} })).toEqual([
      { path: '.a[1]', before: 2, after: 3 },
      { path: '.a[2]', before: expect.anything(), after: 4 },
      { path: '.b.c', before: 'x', after: expect.anything() },
    ]);
    expect(differences({ a: [1] }, { a: [1] })).toEqual([]);
  });

  it('reports the same recordings as the same, and a changed or missing scenario as different', () => {
    const one = { scenarios: [{ name: 's1', record: { status: 'complete' } }] };
    expect(compareRecordings(one, one)).toEqual({ same: true, lines: ['same: 1 scenarios, no difference'] });
    const changed = compareRecordings(one, { scenarios: [{ name: 's1', record: { status: 'failed' } }] });
    expect(changed.same).toBe(false);
    expect(changed.lines).toEqual([
      's1: 1 difference',
      '  .status',
      '    - "complete"',
      '    + "failed"',
      'DIFFERENT: 1 of 1 scenarios differ',
    ]);
    const missing = compareRecordings(one, { scenarios: [] });
    expect(missing.same).toBe(false);
    expect(missing.lines[0]).toBe('s1: only in the first recording');
  });
});

import type { CallOutcome, SuccessfulCall } from '../engine/types';
import {
  answeredCalls,
  callRow,
  describeFailures,
  openingEvent,
  promptCall,
  recordRow,
  soleCallFailure,
  usageOfOutcome,
} from './calls';
import { simulatedReply } from '../../../../test/support/replies';

const ok: SuccessfulCall = simulatedReply('k', 'answer', {
  model: 'p/a',
  responseTimeMs: 12,
  promptTokens: 3,
  completionTokens: 4,
  costUsd: 0.5,
});
const bad: CallOutcome = { ok: false, key: 'j', model: 'p/b', error: 'timed out', responseTimeMs: 9 };
const NONE = { responseTimeMs: null, promptTokens: null, completionTokens: null, costUsd: null };

describe('the small pieces every mode builds its stages from', () => {
  it('plans a call of one prompt after the conversation so far, shown by its model id', () => {
    expect(promptCall('k', 'p/a', 'Q?')).toEqual({
      key: 'k',
      participant: 'p/a',
      model: 'p/a',
      messages: [{ role: 'user', content: 'Q?' }],
    });
    const history = [{ role: 'assistant' as const, content: 'earlier' }];
    expect(promptCall('k', 'p/a', 'Q?', history).messages).toEqual([
      ...history,
      { role: 'user', content: 'Q?' },
    ]);
  });

  it('keeps the answered calls and lists the failed ones as `model (error)`', () => {
    expect(answeredCalls([bad, ok])).toEqual([ok]);
    expect(describeFailures([bad, ok, { ...bad, model: 'p/c', error: 'HTTP 500' }])).toBe(
      'p/b (timed out), p/c (HTTP 500)',
    );
    expect(describeFailures([ok])).toBe('');
  });

  it("words a closing call's failure with its reason, or 'no answer' when there was no call", () => {
    const failed = { role: 'chairman', model: 'p/chair', task: 'synthesize', kept: 'The rest is saved.' };
    expect(soleCallFailure(failed, bad)).toEqual({
      rows: [],
      events: [],
      transition: {
        kind: 'fail',
        message: 'The chairman model p/chair failed to synthesize (timed out). The rest is saved.',
      },
    });
    expect(soleCallFailure(failed, undefined).transition).toEqual({
      kind: 'fail',
      message: 'The chairman model p/chair failed to synthesize (no answer). The rest is saved.',
    });
  });

  it('opens a deliberation with its ids first', () => {
    const ctx = { conversationId: 'c', messageId: 'm' } as Parameters<typeof openingEvent>[1];
    expect(openingEvent('jury_start', ctx, { mode: 'jury' })).toEqual({
      key: 'jury_start',
      type: 'jury_start',
      payload: { conversationId: 'c', messageId: 'm', mode: 'jury' },
    });
    expect(Object.keys(openingEvent('x', ctx, { mode: 'x' }).payload)).toEqual([
      'conversationId',
      'messageId',
      'mode',
    ]);
  });

  it('builds the rows a call wrote, and the rows none did', () => {
    expect(callRow('stage3', 5, 'chairman', ok, { a: 1 })).toEqual({
      stageType: 'stage3',
      stageOrder: 5,
      model: 'p/a',
      role: 'chairman',
      content: 'answer',
      parsedData: { a: 1 },
      responseTimeMs: 12,
      promptTokens: 3,
      completionTokens: 4,
      costUsd: 0.5,
    });
    expect(recordRow('vote_tally', 4, '{}', { x: 1 })).toEqual({
      stageType: 'vote_tally',
      stageOrder: 4,
      model: null,
      role: null,
      content: '{}',
      parsedData: { x: 1 },
      ...NONE,
    });
    expect(usageOfOutcome(ok)).toEqual({
      responseTimeMs: 12,
      promptTokens: 3,
      completionTokens: 4,
      costUsd: 0.5,
    });
    expect(usageOfOutcome(bad)).toEqual(NONE);
    expect(usageOfOutcome(undefined)).toEqual(NONE);
  });
});

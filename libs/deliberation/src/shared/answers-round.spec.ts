import type { CallOutcome, SuccessfulCall } from '../engine/types';
import { answersRoundCalls, reduceAnswersRound, type AnswersRound } from './answers-round';

const ok = (key: string, model: string, content: string, responseTimeMs = 10): SuccessfulCall => ({
  ok: true,
  key,
  model,
  content,
  servedModel: model,
  responseTimeMs,
  promptTokens: 1,
  completionTokens: 2,
  costUsd: 0.001,
  simulated: false,
});
const failed = (key: string, model: string, error = 'HTTP 500'): CallOutcome => ({
  ok: false,
  key,
  model,
  error,
  responseTimeMs: 5,
});

const BY_MODEL: AnswersRound = {
  stageType: 'stage1',
  stageOrder: 1,
  seated: false,
  event: 'stage1_complete',
  next: 'stage2',
  minAnswers: 2,
  panel: 'council models',
  need: 'the council needs at least 2 answers to rank',
};
const SEATED: AnswersRound = {
  ...BY_MODEL,
  stageType: 'initial_answer',
  seated: true,
  event: 'round1_complete',
  next: 'revision',
  panel: 'debate models',
  need: 'a debate needs at least 2',
  parsedData: (call) => ({ responseTimeMs: call.responseTimeMs }),
  leadingRows: (answered) => [
    {
      stageType: 'round1_label_map',
      stageOrder: 0,
      model: null,
      role: null,
      content: answered.map((a) => a.model).join(','),
      parsedData: {},
      responseTimeMs: null,
      promptTokens: null,
      completionTokens: null,
      costUsd: null,
    },
  ],
};

describe('the answers round (council stage 1, vote answer, debate round 1)', () => {
  it('asks every panelist the question, after the conversation so far, keyed by model or by seat', () => {
    const history = [
      { role: 'user' as const, content: 'q0' },
      { role: 'assistant' as const, content: 'a0' },
    ];
    const byModel = answersRoundCalls(BY_MODEL, ['p/a', 'p/b'], 'Why?', history);
    expect(byModel).toEqual([
      {
        key: 'p/a',
        participant: 'p/a',
        model: 'p/a',
        messages: [...history, { role: 'user', content: 'Why?' }],
      },
      {
        key: 'p/b',
        participant: 'p/b',
        model: 'p/b',
        messages: [...history, { role: 'user', content: 'Why?' }],
      },
    ]);
    const seated = answersRoundCalls(SEATED, ['p/a', 'p/a'], 'Why?');
    expect(seated.map((c) => [c.key, c.participant, c.model])).toEqual([
      ['p0', 'p/a', 'p/a'],
      ['p1', 'p/a', 'p/a'],
    ]);
    expect(seated[0].messages).toEqual([{ role: 'user', content: 'Why?' }]);
  });

  it('stores each answer as a respondent row and delivers them all in one event', () => {
    const reduction = reduceAnswersRound(BY_MODEL, [
      ok('p/a', 'p/a', 'A', 11),
      failed('p/b', 'p/b'),
      ok('p/c', 'p/c', 'C', 13),
    ]);
    expect(reduction.rows).toEqual([
      {
        stageType: 'stage1',
        stageOrder: 1,
        model: 'p/a',
        role: 'respondent',
        content: 'A',
        parsedData: {},
        responseTimeMs: 11,
        promptTokens: 1,
        completionTokens: 2,
        costUsd: 0.001,
      },
      {
        stageType: 'stage1',
        stageOrder: 1,
        model: 'p/c',
        role: 'respondent',
        content: 'C',
        parsedData: {},
        responseTimeMs: 13,
        promptTokens: 1,
        completionTokens: 2,
        costUsd: 0.001,
      },
    ]);
    expect(reduction.rows.every((r) => !('participant' in r))).toBe(true);
    expect(reduction.events).toEqual([
      {
        key: 'stage1_complete',
        type: 'stage1_complete',
        payload: {
          data: [
            { model: 'p/a', response: 'A', responseTimeMs: 11 },
            { model: 'p/c', response: 'C', responseTimeMs: 13 },
          ],
        },
      },
    ]);
    expect(reduction.transition).toEqual({ kind: 'next', stage: 'stage2' });
  });

  it('records the seat, the extra parsed data and the leading rows of a seated panel', () => {
    const reduction = reduceAnswersRound(SEATED, [
      ok('p0', 'p/a', 'first', 21),
      ok('p1', 'p/a', 'second', 22),
      failed('p2', 'p/b'),
    ]);
    expect(reduction.rows.map((r) => [r.stageType, r.participant, r.parsedData, r.content])).toEqual([
      ['round1_label_map', undefined, {}, 'p/a,p/a'],
      ['initial_answer', 0, { responseTimeMs: 21 }, 'first'],
      ['initial_answer', 1, { responseTimeMs: 22 }, 'second'],
    ]);
    expect(reduction.events.map((e) => e.type)).toEqual(['round1_complete']);
    expect(reduction.transition).toEqual({ kind: 'next', stage: 'revision' });
  });

  it('ends the deliberation when nobody answered, naming every failure', () => {
    const reduction = reduceAnswersRound(BY_MODEL, [failed('p/a', 'p/a'), failed('p/b', 'p/b', 'timed out')]);
    expect(reduction).toEqual({
      rows: [],
      events: [],
      transition: {
        kind: 'fail',
        message: 'All council models failed to answer: p/a (HTTP 500), p/b (timed out).',
      },
    });
  });

  it("ends the deliberation when fewer than the minimum answered, in the mode's words", () => {
    const reduction = reduceAnswersRound(SEATED, [
      ok('p0', 'p/a', 'x'),
      failed('p1', 'p/b'),
      failed('p2', 'p/c'),
    ]);
    expect(reduction).toEqual({
      rows: [],
      events: [],
      transition: {
        kind: 'fail',
        message: 'Only p/a answered; a debate needs at least 2. Failed: p/b (HTTP 500), p/c (HTTP 500).',
      },
    });
  });
});

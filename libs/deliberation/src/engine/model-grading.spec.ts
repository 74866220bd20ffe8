import type { Grading } from '@conclave/contracts';
import { councilFacts } from '../modes/council/council.facts';
import { modelGraderPrompt } from '../grading/model-grader';
import {
  attachModelGrades,
  isJudgeKey,
  judgeCallKey,
  judgeCallsFor,
  judgeCallsToMake,
} from './model-grading';
import type { CallOutcome, StageRow } from './types';

const row = (
  stageType: string,
  content: string,
  parsedData: Record<string, unknown> | null = null,
): StageRow => ({
  stageType,
  stageOrder: 1,
  model: 'sim/a',
  role: 'council',
  content,
  parsedData,
  responseTimeMs: null,
  promptTokens: null,
  completionTokens: null,
  costUsd: null,
});

const grading: Grading = {
  expected: '42',
  grader: { type: 'model', judges: ['sim/j1', 'sim/j2', 'sim/j3'] },
};
const ok = (key: string, model: string, content: string): CallOutcome => ({
  ok: true,
  key,
  model,
  content,
  servedModel: model,
  responseTimeMs: 5,
  promptTokens: 10,
  completionTokens: 5,
  costUsd: 0.001,
  simulated: true,
  finishReason: 'stop',
});

describe('the model grader sub-step (plain functions)', () => {
  const rows = [
    row('stage1', 'FINAL ANSWER: 42', { responseTimeMs: 5 }),
    row('stage1', 'FINAL ANSWER: 41'),
    row('stage2', 'FINAL RANKING: 1. Response A', { parsedRanking: ['Response A'] }),
  ];

  it('plans one call per judge for every answer row, with the fixed rubric prompt and stable keys', () => {
    const judged = judgeCallsFor(rows, grading, councilFacts, 'What is 6 × 7?');
    expect(judged.map((j) => j.row)).toEqual([0, 1]);
    const prompt = modelGraderPrompt({
      question: 'What is 6 × 7?',
      expected: '42',
      answer: 'FINAL ANSWER: 42',
    });
    expect(judged[0].calls.map((c) => c.model)).toEqual(['sim/j1', 'sim/j2', 'sim/j3']);
    expect(judged[0].calls.map((c) => c.messages)).toEqual([
      [{ role: 'user', content: prompt }],
      [{ role: 'user', content: prompt }],
      [{ role: 'user', content: prompt }],
    ]);
    expect(judged[0].calls.map((c) => c.key)).toEqual([0, 1, 2].map((i) => judgeCallKey(i, prompt)));
    expect(judged[0].calls.every((c) => isJudgeKey(c.key))).toBe(true);
    // The same answer planned again (a retried job) gives the same keys.
    expect(judgeCallsFor(rows, grading, councilFacts, 'What is 6 × 7?')).toEqual(judged);
    expect(new Set(judged.flatMap((j) => j.calls.map((c) => c.key))).size).toBe(6);
  });

  it('asks nobody about an empty answer: unreadable', () => {
    const empty = [row('stage1', '   ')];
    const judged = judgeCallsFor(empty, grading, councilFacts, 'q');
    expect(judged).toEqual([{ row: 0, calls: [] }]);
    expect(judgeCallsToMake(judged, () => undefined)).toEqual([]);
    expect(attachModelGrades(empty, judged, () => undefined)[0].parsedData?.grade).toEqual({
      verdict: 'unreadable',
      reason: 'the answer is empty',
      grader: 'model',
    });
  });

  it('plans nothing without a model grader or facts naming answers', () => {
    expect(judgeCallsFor(rows, undefined, councilFacts, 'q')).toEqual([]);
    expect(judgeCallsFor(rows, { expected: 42, grader: { type: 'numeric' } }, councilFacts, 'q')).toEqual([]);
    expect(judgeCallsFor(rows, grading, undefined, 'q')).toEqual([]);
    expect(attachModelGrades(rows, [], () => undefined)).toBe(rows);
  });

  it('makes only the calls no outcome is stored for, each key once (a retry does not pay twice)', () => {
    const twin = [...rows, row('stage1', 'FINAL ANSWER: 42')];
    const judged = judgeCallsFor(twin, grading, councilFacts, 'q');
    const all = judgeCallsToMake(judged, () => undefined);
    expect(all).toHaveLength(6); // the twin answer shares its judges' calls
    const stored = new Map<string, CallOutcome>([
      [all[0].key, ok(all[0].key, all[0].model, 'VERDICT: CORRECT')],
    ]);
    stored.set(all[4].key, {
      ok: false,
      key: all[4].key,
      model: all[4].model,
      error: 'x',
      responseTimeMs: 1,
    });
    expect(judgeCallsToMake(judged, (k) => stored.get(k)).map((c) => c.key)).toEqual(
      all.filter((_, i) => i !== 0 && i !== 4).map((c) => c.key),
    );
  });

  it('grades each answer by its judges’ majority with a reason; a failed judge is unreadable; a tie is unreadable', () => {
    const judged = judgeCallsFor(rows, grading, councilFacts, 'q');
    const outcomes = new Map<string, CallOutcome>();
    const [a, b] = judged;
    outcomes.set(a.calls[0].key, ok(a.calls[0].key, 'sim/j1', 'VERDICT: CORRECT\nREASON: it is 42.'));
    outcomes.set(a.calls[1].key, ok(a.calls[1].key, 'sim/j2', 'VERDICT: CORRECT\nREASON: matches.'));
    outcomes.set(a.calls[2].key, ok(a.calls[2].key, 'sim/j3', 'VERDICT: INCORRECT\nREASON: no.'));
    outcomes.set(b.calls[0].key, ok(b.calls[0].key, 'sim/j1', 'VERDICT: CORRECT\nREASON: hm.'));
    outcomes.set(b.calls[1].key, ok(b.calls[1].key, 'sim/j2', 'VERDICT: INCORRECT\nREASON: 41 is not 42.'));
    outcomes.set(b.calls[2].key, {
      ok: false,
      key: b.calls[2].key,
      model: 'sim/j3',
      error: 'timeout',
      responseTimeMs: 1,
    });
    const graded = attachModelGrades(rows, judged, (k) => outcomes.get(k));
    expect(graded[0].parsedData).toEqual({
      responseTimeMs: 5,
      grade: {
        verdict: 'correct',
        grader: 'model',
        reason: 'judges: 2 correct, 1 incorrect; sim/j1: it is 42.',
      },
    });
    expect(graded[1].parsedData?.grade).toEqual({
      verdict: 'unreadable',
      grader: 'model',
      reason: 'the judges split evenly (1 correct, 1 incorrect, 1 unreadable)',
    });
    expect(graded[2]).toBe(rows[2]);
    expect(rows[0].parsedData).toEqual({ responseTimeMs: 5 });
  });
});

import {
  anonymousGrades,
  deliberationGrades,
  storedGradeOf as storedGrade,
  type Grade,
  type Grading,
} from '@conclave/contracts';
import { modeDefinition } from '../modes';
import { councilFacts } from '../modes/council/council.facts';
import { delphiFacts } from '../modes/delphi/delphi.facts';
import { deliberateInMemory } from '../testing/deliberate';
import { gradeRows, gradingFields, storedGrading } from './grade-rows';
import type { StageRow } from './types';

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

const numeric: Grading = { expected: 42, grader: { type: 'numeric' } };

describe('gradeRows (issue 37, item 2)', () => {
  it('grades the rows the facts call answers into parsedData.grade, keeping their data', () => {
    const rows = [
      row('stage1', 'I think 42.\nFINAL ANSWER: 42', { responseTimeMs: 5 }),
      row('stage1', 'FINAL ANSWER: 41'),
      row('stage1', 'no idea at all'),
      row('stage2', 'FINAL RANKING: 1. Response A', { parsedRanking: ['Response A'] }),
    ];
    const graded = gradeRows(rows, numeric, councilFacts);
    expect(graded.map((r) => (storedGrade(r.parsedData) ?? { verdict: null }).verdict)).toEqual([
      'correct',
      'incorrect',
      'unreadable',
      null,
    ]);
    expect(graded[0].parsedData).toMatchObject({
      responseTimeMs: 5,
      grade: { extracted: '42', grader: 'numeric' },
    });
    // The ranking row is the same object: nothing but answers is touched.
    expect(graded[3]).toBe(rows[3]);
    expect(graded[0].content).toBe(rows[0].content);
  });

  it('leaves an ungraded run’s rows as they are (the same array)', () => {
    const rows = [row('stage1', 'FINAL ANSWER: 42'), row('stage3', 'FINAL ANSWER: 42')];
    expect(gradeRows(rows, undefined, councilFacts)).toBe(rows);
    // A mode whose facts name no answer (jury) and a model grader (not run here) grade nothing.
    expect(gradeRows(rows, numeric, { gradedAnswer: undefined })).toBe(rows);
    expect(
      gradeRows(rows, { expected: '42', grader: { type: 'model', judges: ['sim/j'] } }, councilFacts),
    ).toBe(rows);
  });

  it('grades Delphi’s estimates and each round’s panel value, not a carried-forward estimate', () => {
    const rows = [
      row('round_1', 'ESTIMATE: 42', { type: 'numeric', estimate: 42 }),
      row('round_1', 'ESTIMATE: ?', { type: 'numeric', estimate: null }),
      row('round_2', 'carried', { type: 'numeric', estimate: 40, carriedForward: true }),
      row('round_1_stats', 'stats', { type: 'stats', median: 41 }),
    ];
    const verdicts = gradeRows(rows, numeric, delphiFacts).map(
      (r) => storedGrade(r.parsedData)?.verdict ?? null,
    );
    expect(verdicts).toEqual(['correct', 'unreadable', null, 'incorrect']);
    const graded = gradeRows(rows, numeric, delphiFacts);
    expect(
      deliberationGrades([...graded, { ...graded[3], stageType: 'round_2_stats' }], delphiFacts)?.final,
    ).toMatchObject({ stageType: 'round_2_stats', grade: { verdict: 'incorrect', extracted: '41' } });
  });

  it('reads a stored grading back, and nothing else', () => {
    expect(storedGrading({ expected: 42, grader: { type: 'numeric' } })).toEqual(numeric);
    expect(storedGrading(null)).toBeUndefined();
    expect(storedGrading({ expected: 42, grader: null })).toBeUndefined();
    expect(storedGrading({ expected: 42, grader: { type: 'telepathy' } })).toBeUndefined();
    expect(storedGrading({ expected: { a: 1 }, grader: { type: 'exact' } })).toBeUndefined();
    expect(gradingFields(numeric)).toEqual({ grading: numeric, expected: '42' });
    expect(gradingFields({ expected: null, grader: { type: 'regex', pattern: 'x' } })).toEqual({
      grading: { expected: null, grader: { type: 'regex', pattern: 'x' } },
    });
    expect(gradingFields(undefined)).toEqual({});
    expect(storedGrade({ grade: { verdict: 'maybe' } })).toBeNull();
  });
});

describe('a graded run in memory stores a grade with every answer', () => {
  const gradesOf = (rows: StageRow[], stageType: string): (Grade | null)[] =>
    rows.filter((r) => r.stageType === stageType).map((r) => storedGrade(r.parsedData));

  it('council: each member’s answer and the synthesis; an always-right member is right, a never-right one wrong', async () => {
    const { store } = await deliberateInMemory(modeDefinition, 'council', {
      question: 'What is 6 times 7?',
      modeConfig: { councilModels: ['sim/a:acc100', 'sim/b:acc0'], chairmanModel: 'sim/chair:keep:acc100' },
      grading: numeric,
    });
    expect(store.state.status).toBe('complete');
    const stage1 = store.rows.filter((r) => r.stageType === 'stage1');
    const byModel = Object.fromEntries(stage1.map((r) => [r.model, storedGrade(r.parsedData)?.verdict]));
    expect(byModel).toEqual({ 'sim/a:acc100': 'correct', 'sim/b:acc0': 'incorrect' });
    expect(gradesOf(store.rows, 'stage3').map((g) => g?.verdict)).toEqual(['correct']);
    // As the deliberation view and the exports read them: every answer, the synthesis as final.
    const grades = deliberationGrades(store.rows, councilFacts);
    expect(grades?.answers.map((a) => a.stageType)).toEqual(['stage1', 'stage1', 'stage3']);
    expect(grades?.final).toMatchObject({
      stageType: 'stage3',
      role: 'chairman',
      grade: { verdict: 'correct' },
    });
    expect(deliberationGrades(store.rows, undefined)?.final).toBeNull();
    // A running Delphi's view drops the names: every answer's and the final one's.
    const anonymous = anonymousGrades(grades!);
    expect(anonymous.answers.map((a) => a.model)).toEqual([null, null, null]);
    expect(anonymous.final).toMatchObject({
      model: null,
      stageType: 'stage3',
      grade: { verdict: 'correct' },
    });
    for (const r of store.rows.filter(
      (x) => x.stageType === 'stage2' || x.stageType === 'stage2_aggregate',
    )) {
      expect(storedGrade(r.parsedData)).toBeNull();
    }
  });

  it('vote and debate: every answer, every revision and the winner', async () => {
    const vote = await deliberateInMemory(modeDefinition, 'vote', {
      question: 'What is 6 times 7?',
      modeConfig: { models: ['sim/a:acc100', 'sim/b:acc100', 'sim/c:acc0'] },
      grading: numeric,
    });
    expect(
      gradesOf(vote.store.rows, 'initial_answer')
        .map((g) => g?.verdict)
        .sort(),
    ).toEqual(['correct', 'correct', 'incorrect']);
    expect(gradesOf(vote.store.rows, 'vote_winner').map((g) => g?.verdict)).toEqual(['correct']);
    expect(gradesOf(vote.store.rows, 'vote')).toEqual(expect.arrayContaining([null]));

    const debate = await deliberateInMemory(modeDefinition, 'debate', {
      question: 'What is 6 times 7?',
      modeConfig: { models: ['sim/a:acc100', 'sim/b:acc100', 'sim/c:acc0'] },
      grading: numeric,
    });
    expect(gradesOf(debate.store.rows, 'initial_answer')).toHaveLength(3);
    // Following revisers take the majority's (right) answer: the wrong one is fixed.
    expect(gradesOf(debate.store.rows, 'revision').map((g) => g?.verdict)).toEqual([
      'correct',
      'correct',
      'correct',
    ]);
    expect(gradesOf(debate.store.rows, 'debate_winner').map((g) => g?.verdict)).toEqual(['correct']);
  });

  it('an ungraded run stores no grade', async () => {
    const { store } = await deliberateInMemory(modeDefinition, 'council', { question: 'What is 6 times 7?' });
    expect(store.rows.length).toBeGreaterThan(0);
    for (const r of store.rows) expect(storedGrade(r.parsedData)).toBeNull();
    expect(deliberationGrades(store.rows, councilFacts)).toBeNull();
  });
});

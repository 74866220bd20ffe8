import { storedGradeOf, type Grading, type ModeName } from '@conclave/contracts';
import { SimulatedProvider, type CompletionRequest, type ModelProvider } from '@conclave/llm';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS, modeDefinition } from '../modes';
import { gradeAnswer } from '../grading/graders';
import { deliberateInMemory } from '../testing/deliberate';
import { MemoryStore } from '../testing/memory-store';
import { gradingFields } from './grade-rows';
import { isJudgeKey } from './model-grading';
import { StageRunner } from './stage-runner';
import type { ModeDefaults } from './types';

/**
 * The model grader's sub-step inside a stage job (StageRun.judge), on the in-memory store: the
 * judges are asked after the stage's calls and before its commit, their outcomes stored as the
 * stage's calls, and a job run again pays for no judge already answered.
 */
const DEFAULTS: ModeDefaults = {
  timeoutMs: 10_000,
  council: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};
const QUESTION = 'What is 6 times 7? End with a line FINAL ANSWER: <number>.';
const GRADING: Grading = { expected: '42', grader: { type: 'model', judges: ['sim/j1', 'sim/j2'] } };

function setUp(grading: Grading | undefined) {
  const mode = modeDefinition('council');
  if (!mode) throw new Error('council is not registered');
  const resolved = mode.resolveConfig(
    {
      question: QUESTION,
      councilModels: ['sim/a:acc50', 'sim/b:acc50', 'sim/c:acc50'],
      chairmanModel: 'sim/chair',
    },
    DEFAULTS,
  );
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  const store = new MemoryStore(QUESTION, resolved.config, gradingFields(grading));
  const asked: CompletionRequest[] = [];
  const simulated = new SimulatedProvider({
    responders: SIMULATED_RESPONDERS,
    fallback: SIMULATED_FALLBACK,
    latencyMs: 0,
    seed: 'model-grader',
  });
  const provider: ModelProvider = {
    name: 'counting',
    key: 'counting',
    complete(request) {
      asked.push(request);
      return simulated.complete(request);
    },
  };
  const runner = new StageRunner(
    modeDefinition,
    store,
    provider,
    { publish: async () => undefined },
    {
      enqueueStage: async () => undefined,
      stageJobState: async () => 'pending',
      rescheduleStage: async () => undefined,
    },
    { historyTurns: 0, deliberationCapMs: 600_000 },
  );
  return { store, runner, asked };
}

const judgesAsked = (asked: CompletionRequest[]) => asked.filter((r) => r.model.startsWith('sim/j'));

describe('StageRun: the model grader sub-step', () => {
  it("asks every judge about every answer after the stage's calls, stores them as the stage's calls, and grades the rows", async () => {
    const { store, runner, asked } = setUp(GRADING);
    await runner.runStage('m1', 'stage1');
    expect(asked.filter((r) => !r.model.startsWith('sim/j'))).toHaveLength(3);
    expect(judgesAsked(asked)).toHaveLength(6);
    const judges = store.outcomes.stage1.filter((o) => isJudgeKey(o.key));
    expect(judges).toHaveLength(6);
    expect(judges.every((o) => o.ok && (o.promptTokens ?? 0) > 0)).toBe(true);
    const rows = store.rows.filter((r) => r.stageType === 'stage1');
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      const grade = row.parsedData?.grade as { verdict: string; grader: string; reason: string };
      expect(grade.grader).toBe('model');
      expect(grade.verdict).toBe(/FINAL ANSWER: 42$/.test(row.content.trim()) ? 'correct' : 'incorrect');
      expect(grade.reason).toMatch(/^judges: /);
    }
    expect(store.state.stage).toBe('stage2');
    // The next stage (rankings: no answers) asks no judge.
    await runner.runStage('m1', 'stage2');
    expect(judgesAsked(asked)).toHaveLength(6);
    expect(store.outcomes.stage2.some((o) => isJudgeKey(o.key))).toBe(false);
  });

  it('a job run again after it stored the answers and some judges pays for the other judges only, grading alike', async () => {
    const first = setUp(GRADING);
    await first.runner.runStage('m1', 'stage1');
    const seats = first.store.outcomes.stage1.filter((o) => !isJudgeKey(o.key));
    const judges = first.store.outcomes.stage1.filter((o) => isJudgeKey(o.key));
    // An earlier run stored the three answers and two of the six judges, then died before committing.
    const again = setUp(GRADING);
    again.store.outcomes.stage1 = structuredClone([...seats, ...judges.slice(0, 2)]);
    await again.runner.runStage('m1', 'stage1');
    expect(again.asked.filter((r) => !r.model.startsWith('sim/j'))).toHaveLength(0);
    expect(judgesAsked(again.asked)).toHaveLength(4);
    expect(
      again.store.outcomes.stage1
        .filter((o) => isJudgeKey(o.key))
        .map((o) => o.key)
        .sort(),
    ).toEqual(judges.map((o) => o.key).sort());
    const gradesOf = (rows: typeof first.store.rows) =>
      rows.filter((r) => r.stageType === 'stage1').map((r) => [r.model, r.parsedData?.grade]);
    expect(gradesOf(again.store.rows)).toEqual(gradesOf(first.store.rows));
    // Every judge stored: run again, nobody is asked.
    const third = setUp(GRADING);
    third.store.outcomes.stage1 = structuredClone(first.store.outcomes.stage1);
    await third.runner.runStage('m1', 'stage1');
    expect(third.asked).toHaveLength(0);
    expect(gradesOf(third.store.rows)).toEqual(gradesOf(first.store.rows));
  });

  it('without a model grader no judge is asked and no outcome is added', async () => {
    const { store, runner, asked } = setUp({ expected: '42', grader: { type: 'normalized' } });
    await runner.runStage('m1', 'stage1');
    expect(asked).toHaveLength(3);
    expect(store.outcomes.stage1).toHaveLength(3);
    expect(
      store.rows
        .filter((r) => r.stageType === 'stage1')
        .every((r) => (r.parsedData?.grade as { grader: string }).grader === 'normalized'),
    ).toBe(true);
  });
});

describe('the model grader in every mode that names answers (in memory)', () => {
  const question = 'What is 6 times 7? End with a line FINAL ANSWER: <number>.';
  const model: Grading = {
    expected: '42',
    grader: { type: 'model', judges: ['sim/j1', 'sim/j2', 'sim/j3'] },
  };
  const configs: [ModeName, Record<string, unknown>][] = [
    ['council', { councilModels: ['sim/a:acc100', 'sim/b:acc0'], chairmanModel: 'sim/chair:keep:acc100' }],
    ['vote', { models: ['sim/a:acc100', 'sim/b:acc100', 'sim/c:acc0'] }],
    ['debate', { models: ['sim/a:acc100', 'sim/b:acc100', 'sim/c:acc0'] }],
  ];
  it.each(configs)(
    '%s: every answer the exact grader grades, the judges grade alike, with judge calls stored',
    async (mode, modeConfig) => {
      const { store } = await deliberateInMemory(modeDefinition, mode, {
        question,
        modeConfig,
        grading: model,
      });
      expect(store.state.status).toBe('complete');
      const graded = store.rows.filter((r) => storedGradeOf(r.parsedData) !== null);
      expect(graded.length).toBeGreaterThan(2);
      const verdicts = new Set<string>();
      for (const row of graded) {
        const grade = storedGradeOf(row.parsedData);
        const exact = gradeAnswer(row.content, { expected: '42', grader: { type: 'normalized' } });
        expect({
          stage: row.stageType,
          model: row.model,
          grader: grade?.grader,
          verdict: grade?.verdict,
        }).toEqual({
          stage: row.stageType,
          model: row.model,
          grader: 'model',
          verdict: exact.verdict,
        });
        verdicts.add(exact.verdict);
      }
      expect(verdicts).toEqual(new Set(['correct', 'incorrect']));
      const judges = Object.values(store.outcomes)
        .flat()
        .filter((o) => isJudgeKey(o.key));
      // One call per judge per distinct answer of a stage (an identical answer shares its judges).
      expect(judges.length).toBe(3 * new Set(graded.map((r) => `${r.stageType}|${r.content}`)).size);
      expect(judges.every((o) => o.ok)).toBe(true);
    },
  );
});

describe('the model grader in Delphi (in memory)', () => {
  it("grades every estimate and the panel's value by the judges, and the exercise completes", async () => {
    const { store } = await deliberateInMemory(modeDefinition, 'delphi', {
      question: 'How many moons does Mars have?',
      grading: { expected: '2', grader: { type: 'model', judges: ['sim/j1'] } },
    });
    expect(store.state.status).toBe('complete');
    const graded = store.rows.filter((r) => storedGradeOf(r.parsedData) !== null);
    expect(graded.length).toBeGreaterThan(3);
    for (const row of graded) expect(storedGradeOf(row.parsedData)?.grader).toBe('model');
    expect(store.rows.filter((r) => /^round_\d+(_stats)?$/.test(r.stageType)).length).toBeGreaterThanOrEqual(
      graded.length,
    );
  });
});

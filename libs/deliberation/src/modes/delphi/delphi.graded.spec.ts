import { deliberationGrades, storedGradeOf, type Grading } from '@conclave/contracts';
import { hashString, parseSimModel, seededRandom, type SimulationContext } from '@conclave/llm';
import { gradeAnswer, type LocalGrading } from '../../grading/graders';
import {
  numericExpected,
  offEstimate,
  ownEstimate,
  towardMedian,
  type SimulatedItem,
} from '../../shared/graded-simulation';
import { deliberateInMemory } from '../../testing/deliberate';
import { modeDefinition } from '..';
import { delphiFacts } from './delphi.facts';
import { parseEstimate } from './delphi.parse';
import { buildClassifyPrompt, buildNumericRound1Prompt } from './delphi.prompts';
import { classifyResponder, panelistResponder } from './delphi.sim';

/**
 * Simulated accuracy in Delphi (issue 37): with a numeric expected answer a panelist's first
 * estimate is the expected value with the probability its acc<N> gives, an off value otherwise,
 * and later rounds move toward the median. Bounds as in graded-simulation.spec.ts: 4.5 standard
 * deviations of a binomial proportion (the draws are fixed by their seeds: a pass is for good).
 */
const bound = (p: number, n: number) => 4.5 * Math.sqrt((p * (1 - p)) / n);
const SEED = 'delphi-graded-spec';
const N = 20_000;
const expectedOf = (i: number) => String(((i * 37) % 5000) + (i % 3 === 0 ? 0 : 1));
const item = (persona: string, i: number): SimulatedItem => ({
  seed: SEED,
  persona,
  question: `Item ${i}: how many units are there?`,
  expected: expectedOf(i),
});
const numeric = (i: number) => numericExpected(expectedOf(i))!;
const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** P(more than half of n independent members are right), each with probability p. */
const majorityRight = (n: number, p: number) => {
  let total = 0;
  const choose = (a: number, b: number) => {
    let c = 1;
    for (let k = 1; k <= b; k++) c = (c * (a - b + k)) / k;
    return c;
  };
  for (let k = Math.floor(n / 2) + 1; k <= n; k++) total += choose(n, k) * p ** k * (1 - p) ** (n - k);
  return total;
};

describe('Delphi graded simulation: plain functions', () => {
  it('reads a numeric expected answer with its decimals, and nothing else', () => {
    expect(numericExpected('84')).toEqual({ value: 84, decimals: 0 });
    expect(numericExpected(' -3.25 ')).toEqual({ value: -3.25, decimals: 2 });
    expect(numericExpected('1e21')).toEqual({ value: 1e21, decimals: 0 });
    expect(numericExpected('Paris')).toBeNull();
    expect(numericExpected('')).toBeNull();
  });

  it.each([0.7, 0.3, 0.95])(
    'a first estimate is right (graded correct) within a binomial bound of acc %p',
    (p) => {
      const grading: LocalGrading = { expected: 0, grader: { type: 'numeric' } };
      let right = 0;
      for (let i = 0; i < N; i++) {
        const value = ownEstimate(item('athena', i), numeric(i), p);
        const grade = gradeAnswer(String(value), { ...grading, expected: Number(expectedOf(i)) });
        expect(grade.verdict).not.toBe('unreadable');
        if (grade.verdict === 'correct') right += 1;
      }
      expect(Math.abs(right / N - p)).toBeLessThan(bound(p, N));
    },
  );

  it('an off estimate is never the expected value, 5–50 % away, on one side per item, not below 0', () => {
    for (const expected of ['0', '1', '7', '84', '2500', '-40', '3.5', '0.25']) {
      const e = numericExpected(expected)!;
      for (let i = 0; i < 300; i++) {
        const question = `q${i}`;
        const values = ['a', 'b', 'c', 'd', 'e'].map((persona) =>
          offEstimate({ seed: SEED, persona, question, expected }, e),
        );
        for (const v of values) {
          expect(v).not.toBe(e.value);
          expect(Number(v.toFixed(e.decimals))).toBe(v);
          if (e.value >= 0) expect(v).toBeGreaterThanOrEqual(0);
          if (Math.abs(e.value) >= 20)
            expect(Math.abs(v - e.value) / Math.abs(e.value)).toBeLessThanOrEqual(0.51);
        }
        // A shared misconception: every off value of an item on the same side of the expected one.
        expect(new Set(values.map((v) => Math.sign(v - e.value))).size).toBe(1);
      }
    }
  });

  it('is deterministic per seed, name and item, and independent across names', () => {
    let both = 0;
    for (let i = 0; i < N; i++) {
      expect(ownEstimate(item('a', i), numeric(i), 0.7)).toBe(ownEstimate(item('a', i), numeric(i), 0.7));
      const a = ownEstimate(item('a', i), numeric(i), 0.7) === numeric(i).value;
      const b = ownEstimate(item('b', i), numeric(i), 0.7) === numeric(i).value;
      if (a && b) both += 1;
    }
    expect(Math.abs(both / N - 0.49)).toBeLessThan(bound(0.49, N));
  });

  it.each([
    [3, 0.7],
    [5, 0.6],
    [4, 0.7],
  ])(
    'the first-round median of %i members at acc %p is the expected value as often as a strict majority is right',
    (n, p) => {
      const personas = Array.from({ length: n }, (_, k) => `m${k}`);
      let right = 0;
      for (let i = 0; i < N; i++) {
        const values = personas.map((persona) => ownEstimate(item(persona, i), numeric(i), p));
        if (median(values) === numeric(i).value) right += 1;
      }
      const closed = majorityRight(n, p); // 0.784 for three at 0.7
      expect(Math.abs(right / N - closed)).toBeLessThan(bound(closed, N));
    },
  );

  it('moving toward the median: one at the median stays, nobody crosses it, the median stays', () => {
    expect(towardMedian(84, 84, 0)).toBe(84);
    expect(towardMedian(100, 84, 0)).toBe(87);
    expect(towardMedian(3.9, 3.5, 1)).toBe(3.6);
    for (let i = 0; i < 2000; i++) {
      let values = ['a', 'b', 'c', 'd', 'e'].map((persona) => ownEstimate(item(persona, i), numeric(i), 0.5));
      const first = median(values);
      for (let round = 0; round < 4; round++) {
        const m = median(values);
        const next = values.map((v) => towardMedian(v, m, 0));
        next.forEach((v, k) => expect(Math.sign(v - m) * Math.sign(values[k] - m)).toBeGreaterThanOrEqual(0));
        values = next;
      }
      expect(median(values)).toBe(first);
    }
  });
});

const classifyPromptFor = (question: string) => buildClassifyPrompt(question, SEED);

function ctxFor(model: string, prompt: string, expected: string | undefined): SimulationContext {
  const { persona, flags } = parseSimModel(model);
  return {
    model,
    persona,
    flags,
    messages: [{ role: 'user', content: prompt }],
    prompt,
    random: seededRandom(hashString(`${SEED}|${model}|${prompt}`)),
    seed: SEED,
    ...(expected !== undefined ? { expected } : {}),
  };
}

describe('Delphi graded simulation through the responders', () => {
  it('classifies a question with a numeric expected answer as numeric, unless told otherwise', () => {
    const classify = (model: string, expected?: string) =>
      classifyResponder.respond(
        ctxFor(model, classifyPromptFor('Which is the capital, Rome or Milan?'), expected),
      );
    expect(classify('sim/f')).toMatch(/^TYPE: QUALITATIVE/);
    expect(classify('sim/f', '84')).toMatch(/^TYPE: NUMERIC/);
    expect(classify('sim/f', 'Rome')).toMatch(/^TYPE: QUALITATIVE/);
    expect(classify('sim/f:qualitative', '84')).toMatch(/^TYPE: QUALITATIVE/);
  });

  it('a round-1 estimate is the expected value at acc100, an off one at acc0, written with its decimals', () => {
    const prompt = buildNumericRound1Prompt('How many litres are in the tank?', SEED);
    const estimate = (model: string, expected: string) =>
      parseEstimate(panelistResponder.respond(ctxFor(model, prompt, expected))).estimate;
    expect(estimate('sim/a:acc100', '1234')).toBe(1234);
    expect(estimate('sim/a:acc100', '3.75')).toBe(3.75);
    expect(estimate('sim/a:acc100', '-12')).toBe(-12);
    expect(estimate('sim/a:acc0', '1234')).not.toBe(1234);
    expect(panelistResponder.respond(ctxFor('sim/a:acc100', prompt, '3.75'))).toMatch(/^ESTIMATE: 3\.75$/m);
  });
});

describe('a graded Delphi in memory', () => {
  const grading = (expected: number): Grading => ({ expected, grader: { type: 'numeric' } });

  it('first estimates are right as drawn, the panel value is the expected one exactly when a majority is', async () => {
    let majorities = 0;
    let minorities = 0;
    for (let i = 0; i < 12; i++) {
      const expected = 120 + i * 7;
      const models = ['sim/a:acc50', 'sim/b:acc50', 'sim/c:acc50'];
      const question = `How many seats does hall ${i} have?`;
      const { store } = await deliberateInMemory(modeDefinition, 'delphi', {
        question,
        modeConfig: { panelistModels: models, facilitatorModel: 'sim/f' },
        grading: grading(expected),
      });
      expect(store.state.status).toBe('complete');
      const first = store.rows.filter((r) => r.stageType === 'round_1');
      expect(first).toHaveLength(3);
      const rightFirst = first.map((r) => storedGradeOf(r.parsedData)?.verdict === 'correct');
      // Each as its draw says (the in-memory runner's seed and the fenced question's text).
      const drawn = models.map(
        (m) =>
          ownEstimate(
            {
              seed: 'deliberate-in-memory',
              persona: parseSimModel(m).persona,
              question,
              expected: String(expected),
            },
            { value: expected, decimals: 0 },
            0.5,
          ) === expected,
      );
      expect([...rightFirst].sort()).toEqual([...drawn].sort());
      const majority = rightFirst.filter(Boolean).length >= 2;
      if (majority) majorities += 1;
      else minorities += 1;
      const grades = deliberationGrades(store.rows, delphiFacts);
      expect(grades?.final?.grade.verdict).toBe(majority ? 'correct' : 'incorrect');
      // Later rounds keep a right estimate where the median is right.
      const rounds = [...new Set(store.rows.map((r) => r.stageType).filter((s) => /^round_\d+$/.test(s)))];
      if (majority && rounds.length > 1) {
        const last = store.rows.filter((r) => r.stageType === rounds.at(-1));
        expect(
          last.filter((r) => storedGradeOf(r.parsedData)?.verdict === 'correct').length,
        ).toBeGreaterThanOrEqual(2);
      }
    }
    expect(majorities).toBeGreaterThan(0);
    expect(minorities).toBeGreaterThan(0);
  });

  it('an ungraded Delphi is as before: estimates around its own baseline', async () => {
    const { store } = await deliberateInMemory(modeDefinition, 'delphi', {
      question: 'How many seats does hall 3 have?',
    });
    expect(store.state.status).toBe('complete');
    for (const r of store.rows) expect(storedGradeOf(r.parsedData)).toBeNull();
  });
});

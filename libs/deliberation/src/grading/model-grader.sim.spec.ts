import { hashString, parseSimModel, seededRandom, type SimulationContext } from '@conclave/llm';
import { modelGraderPrompt, parseModelVerdict } from './model-grader';
import { judgeResponder, judgedFinalAnswer, simulatedJudgement } from './model-grader.sim';

const ctxFor = (model: string, prompt: string, seed = 's1'): SimulationContext => {
  const { persona, flags } = parseSimModel(model);
  return {
    model,
    persona,
    flags,
    messages: [{ role: 'user', content: prompt }],
    prompt,
    random: seededRandom(hashString(prompt)),
    seed,
  };
};

describe('the simulated judge (model grader)', () => {
  const question = 'What is 6 × 7?';
  const right = modelGraderPrompt({ question, expected: '42', answer: 'Let me see.\nFINAL ANSWER: **42**' });
  const wrong = modelGraderPrompt({ question, expected: '42', answer: 'Let me see.\nFINAL ANSWER: 41' });

  it('knows the grading prompt, and no other', () => {
    expect(judgeResponder.matches(right)).toBe(true);
    expect(judgeResponder.matches('Generate a brief title for this question')).toBe(false);
    expect(judgeResponder.matches(`Question: ${right}`)).toBe(false);
  });

  it('answers in the rubric format: CORRECT when the final answer matches (normalized), with a reason', () => {
    const yes = parseModelVerdict(judgeResponder.respond(ctxFor('sim/athena', right)));
    const no = parseModelVerdict(judgeResponder.respond(ctxFor('sim/athena', wrong)));
    expect(yes.verdict).toBe('correct');
    expect(yes.reason).toContain('42');
    expect(no.verdict).toBe('incorrect');
    expect(no.reason).toContain('41');
  });

  it('reads the last non-empty line when there is no FINAL ANSWER line, after normalization', () => {
    expect(judgedFinalAnswer('Some working.\n\n  The Eiffel Tower.  \n')).toBe('The Eiffel Tower.');
    const prompt = modelGraderPrompt({
      question: 'Q?',
      expected: 'the eiffel tower',
      answer: 'x\nThe Eiffel Tower.',
    });
    expect(parseModelVerdict(judgeResponder.respond(ctxFor('sim/a', prompt))).verdict).toBe('correct');
  });

  it('an acc<N> judge tells the truth about N % of the time, deterministically', () => {
    const judge = { seed: 'seed', persona: 'noisy', flags: ['acc70'] };
    let truthful = 0;
    const n = 2000;
    for (let i = 0; i < n; i++) {
      const item = { question: `q${i}`, expected: `${i}`, answer: `FINAL ANSWER: ${i}` };
      const first = simulatedJudgement(item, judge);
      expect(simulatedJudgement(item, judge)).toEqual(first);
      expect(first.correct).toBe(first.truthful);
      if (first.truthful) truthful++;
    }
    expect(truthful / n).toBeGreaterThan(0.66);
    expect(truthful / n).toBeLessThan(0.74);
    // Without acc<N> a judge is always truthful; acc0 always flips.
    const item = { question: 'q', expected: '1', answer: 'FINAL ANSWER: 2' };
    expect(simulatedJudgement(item, { seed: 's', persona: 'p', flags: [] })).toEqual({
      correct: false,
      truthful: true,
    });
    expect(simulatedJudgement(item, { seed: 's', persona: 'p', flags: ['acc0'] })).toEqual({
      correct: true,
      truthful: false,
    });
  });

  it('a prompt without the fenced blocks is judged incorrect, never throws', () => {
    const prompt = 'You are grading an answer to a question against the expected answer.\nnothing else';
    expect(parseModelVerdict(judgeResponder.respond(ctxFor('sim/a', prompt))).verdict).toBe('incorrect');
  });
});

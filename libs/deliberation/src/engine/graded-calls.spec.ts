import { modeDefinition } from '../modes';
import { finalAnswerOf, majorityAnswer, ownAnswer } from '../shared/graded-simulation';
import { deliberateInMemory } from '../testing/deliberate';

/**
 * A graded item's expected answer reaches every model call of a run (LoadedDeliberation.expected →
 * DeliberationContext → CompletionRequest.expected → the simulated responders), on the first
 * stage and on the stages carried from a commit alike (issue 37).
 */
describe('a graded run in memory', () => {
  const council = (question: string, expected?: string) =>
    deliberateInMemory(modeDefinition, 'council', {
      question,
      modeConfig: {
        councilModels: ['sim/a:acc70', 'sim/b:acc70', 'sim/c:acc70'],
        chairmanModel: 'sim/chair:follow',
      },
      ...(expected !== undefined ? { expected } : {}),
    });

  it('every member answers with a FINAL ANSWER line and the chairman follows their majority', async () => {
    let majorities = 0;
    for (let i = 0; i < 12; i++) {
      const question = `What is ${i} times 7?`;
      const expected = String(i * 7);
      const { store } = await council(question, expected);
      expect(store.state.status).toBe('complete');
      const answers = store.rows.filter((r) => r.stageType === 'stage1').map((r) => finalAnswerOf(r.content));
      expect(answers).toHaveLength(3);
      for (const answer of answers) expect(answer).not.toBeNull();
      const synthesis = store.rows.find((r) => r.stageType === 'stage3');
      const majority = majorityAnswer(answers);
      if (majority !== null) majorities += 1;
      const chairAlone = ownAnswer({ seed: 'deliberate-in-memory', persona: 'chair', question, expected }, 0);
      expect(finalAnswerOf(synthesis?.content ?? '')).toBe(majority ?? chairAlone);
    }
    // Both branches ran: items with a majority and (1 − 0.784 of the time) without one.
    expect(majorities).toBeGreaterThan(0);
    expect(majorities).toBeLessThan(12);
  });

  it('an ungraded run is as before: no FINAL ANSWER line anywhere', async () => {
    const { store } = await council('What is 3 times 7?');
    expect(store.state.status).toBe('complete');
    for (const row of store.rows) expect(row.content).not.toMatch(/FINAL ANSWER/);
  });

  it('a debate’s revisions end with the answer they chose', async () => {
    const { store } = await deliberateInMemory(modeDefinition, 'debate', {
      question: 'What is 5 times 9?',
      modeConfig: { models: ['sim/a:acc70', 'sim/b:acc70', 'sim/c:acc70'] },
      expected: '45',
    });
    expect(store.state.status).toBe('complete');
    const initial = store.rows
      .filter((r) => r.stageType === 'initial_answer')
      .map((r) => finalAnswerOf(r.content));
    const revised = store.rows.filter((r) => r.stageType === 'revision').map((r) => finalAnswerOf(r.content));
    expect(revised).toHaveLength(3);
    const majority = majorityAnswer(initial);
    if (majority !== null) expect(revised).toEqual([majority, majority, majority]);
    else expect(revised).toEqual(initial);
  });

  it('a vote of following voters elects an answer of their majority, whenever they have one', async () => {
    let majorities = 0;
    for (let i = 0; i < 8; i++) {
      const { store } = await deliberateInMemory(modeDefinition, 'vote', {
        question: `What is ${i} plus 19?`,
        modeConfig: { models: ['sim/a:acc70:follow', 'sim/b:acc70:follow', 'sim/c:acc70:follow'] },
        expected: String(i + 19),
      });
      expect(store.state.status).toBe('complete');
      const answers = store.rows
        .filter((r) => r.stageType === 'initial_answer')
        .map((r) => finalAnswerOf(r.content));
      const winner = store.rows.find((r) => r.stageType === 'vote_winner');
      const majority = majorityAnswer(answers);
      if (majority === null) continue;
      majorities += 1;
      expect(finalAnswerOf(winner?.content ?? '')).toBe(majority);
    }
    expect(majorities).toBeGreaterThan(0);
  });
});

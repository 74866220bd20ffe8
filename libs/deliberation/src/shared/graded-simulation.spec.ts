import { hashString, parseSimModel, seededRandom, type SimulationContext } from '@conclave/llm';
import { buildSynthesisPrompt } from '../modes/council/council.prompts';
import { councilSynthesisResponder } from '../modes/council/council.sim';
import { buildRevisionPrompt, buildVoteOnRevisedPrompt } from '../modes/debate/debate.prompts';
import { debateVoteResponder, revisionResponder } from '../modes/debate/debate.sim';
import { buildTiebreakPrompt, buildVoteModePrompt } from '../modes/vote/vote.prompts';
import { tiebreakResponder, voteResponders } from '../modes/vote/vote.sim';
import {
  accuracyOf,
  answerToward,
  behaviourOf,
  finalAnswerOf,
  majorityAnswer,
  ownAnswer,
  pickRandom,
  withFinalAnswer,
  wrongAnswer,
  type SimulatedItem,
} from './graded-simulation';
import { answerResponder } from './simulation';
import { parseVote } from './voting';

/**
 * The bound an empirical proportion of n independent draws with probability p stays within:
 * 4.5 standard deviations (a false alarm about once in 150 000 runs; the draws are fixed by their
 * seeds anyway, so a pass is a pass for good). 0.0146 for p = 0.7 and n = 20 000.
 */
const bound = (p: number, n: number) => 4.5 * Math.sqrt((p * (1 - p)) / n);

const SEED = 'graded-spec';
const questionOf = (i: number) => `Item ${i}: what is ${i} plus ${(i * 7) % 13}?`;
const expectedOf = (i: number) => String(i + ((i * 7) % 13));
const item = (persona: string, i: number, seed = SEED): SimulatedItem => ({
  seed,
  persona,
  question: questionOf(i),
  expected: expectedOf(i),
});

/** A call's context as the simulated provider builds it. */
function ctxFor(model: string, prompt: string, expected: string | undefined, seed = SEED): SimulationContext {
  const { persona, flags } = parseSimModel(model);
  return {
    model,
    persona,
    flags,
    messages: [{ role: 'user', content: prompt }],
    prompt,
    random: seededRandom(hashString(`${seed}|${model}|${prompt}`)),
    seed,
    ...(expected !== undefined ? { expected } : {}),
  };
}

describe('graded simulation: directives', () => {
  it('reads acc<N> as a probability (0 without one, out of range ignored) and the behaviours', () => {
    expect(accuracyOf(['acc70'])).toBe(0.7);
    expect(accuracyOf(['delay5', 'acc100'])).toBe(1);
    expect(accuracyOf(['acc0'])).toBe(0);
    expect(accuracyOf([])).toBe(0);
    expect(accuracyOf(['acc101', 'acc'])).toBe(0);
    expect(behaviourOf(['acc70', 'follow'])).toBe('follow');
    expect(behaviourOf(['keep'])).toBe('keep');
    expect(behaviourOf(['random'])).toBe('random');
    expect(behaviourOf(['stand', 'voteA'])).toBeNull();
  });
});

describe('graded simulation: a member alone', () => {
  const N = 20_000;

  it.each([0.7, 0.3, 0.95])('acc%p is right within a tight binomial bound of its rate', (p) => {
    let right = 0;
    for (let i = 0; i < N; i++) if (ownAnswer(item('athena', i), p) === expectedOf(i)) right += 1;
    expect(Math.abs(right / N - p)).toBeLessThan(bound(p, N));
  });

  it('is deterministic per seed, name and item, and independent across names and seeds', () => {
    let both = 0;
    let sameAcrossSeeds = 0;
    for (let i = 0; i < N; i++) {
      expect(ownAnswer(item('athena', i), 0.7)).toBe(ownAnswer(item('athena', i), 0.7));
      const a = ownAnswer(item('athena', i), 0.7) === expectedOf(i);
      const b = ownAnswer(item('hermes', i), 0.7) === expectedOf(i);
      if (a && b) both += 1;
      if (a === (ownAnswer(item('athena', i, 'other-seed'), 0.7) === expectedOf(i))) sameAcrossSeeds += 1;
    }
    // Independent members are both right 0.49 of the time; two seeds agree 0.7² + 0.3² = 0.58.
    expect(Math.abs(both / N - 0.49)).toBeLessThan(bound(0.49, N));
    expect(Math.abs(sameAcrossSeeds / N - 0.58)).toBeLessThan(bound(0.58, N));
  });

  it('a wrong answer is never the expected one, keeps its kind and mostly differs by member', () => {
    let collisions = 0;
    const n = 2_000;
    for (let i = 0; i < n; i++) {
      const a = wrongAnswer(item('athena', i));
      const b = wrongAnswer(item('hermes', i));
      for (const wrong of [a, b]) {
        expect(wrong).not.toBe(expectedOf(i));
        expect(wrong).toMatch(/^\d+$/); // a non-negative integer for a non-negative integer
      }
      if (a === b) collisions += 1;
    }
    expect(collisions / n).toBeLessThan(0.03);
    const decimal = wrongAnswer({ seed: SEED, persona: 'a', question: 'q', expected: '2.50' });
    expect(decimal).toMatch(/^-?\d+\.\d\d$/);
    expect(decimal).not.toBe('2.50');
    expect(wrongAnswer({ seed: SEED, persona: 'a', question: 'q', expected: '-3' })).toMatch(/^-?\d+$/);
    const choices = 'Which?\nA) one\nB) two\nC) three';
    for (const persona of ['a', 'b', 'c', 'd', 'e', 'f']) {
      expect(['A', 'C']).toContain(wrongAnswer({ seed: SEED, persona, question: choices, expected: 'B' }));
      const text = wrongAnswer({ seed: SEED, persona, question: 'Capital?', expected: 'Paris' });
      expect(text.toLowerCase()).not.toContain('paris');
    }
  });
});

describe('graded simulation: the answer toward others', () => {
  it('majority is strict, folds case and space, and counts unreadable answers in the whole', () => {
    expect(majorityAnswer(['12', ' 12', '13'])).toBe('12');
    expect(majorityAnswer(['Paris', 'paris ', null])).toBe('Paris');
    expect(majorityAnswer(['12', '13', '14'])).toBeNull();
    expect(majorityAnswer(['12', '12', null, null])).toBeNull();
    expect(majorityAnswer([])).toBeNull();
  });

  it('follow, keep and random', () => {
    const random = () => 0.99;
    expect(answerToward('follow', ['1', '1', '2'], '9', random)).toBe('1');
    expect(answerToward('follow', ['1', '3', '2'], '9', random)).toBe('9');
    expect(answerToward('keep', ['1', '1', '1'], '9', random)).toBe('9');
    expect(answerToward('random', ['1', null, '2'], '9', random)).toBe('2');
    expect(answerToward('random', [null], '9', random)).toBe('9');
  });

  it('reads the last FINAL ANSWER line and writes exactly one', () => {
    expect(finalAnswerOf('x\nFINAL ANSWER: 3\nmore\nfinal answer:  42 \n')).toBe('42');
    expect(finalAnswerOf('no line here')).toBeNull();
    const written = withFinalAnswer('body\nFINAL ANSWER: 3\n', '7');
    expect(written).toBe('body\n\nFINAL ANSWER: 7');
  });

  describe('closed forms over three independent acc70 members (20 000 items)', () => {
    const N = 20_000;
    const p = 0.7;
    const tally = (chair: (i: number, shown: string[]) => string) => {
      let right = 0;
      for (let i = 0; i < N; i++) {
        const shown = ['athena', 'hermes', 'apollo'].map((persona) => ownAnswer(item(persona, i), p));
        if (chair(i, shown) === expectedOf(i)) right += 1;
      }
      return right / N;
    };
    const own = (i: number) => ownAnswer(item('chairman', i), 0); // no acc<N>: never right alone

    it('a following chairman is right p³ + 3p²(1 − p) = 0.784 of the time', () => {
      const closed = p ** 3 + 3 * p ** 2 * (1 - p);
      expect(closed).toBeCloseTo(0.784, 10);
      const rate = tally((i, shown) =>
        answerToward('follow', shown, own(i), pickRandom(item('chairman', i), shown)),
      );
      expect(Math.abs(rate - closed)).toBeLessThan(bound(closed, N));
    });

    it('a random chairman is right p of the time, a keeping one as often as it is alone', () => {
      const random = tally((i, shown) =>
        answerToward('random', shown, own(i), pickRandom(item('chairman', i), shown)),
      );
      expect(Math.abs(random - p)).toBeLessThan(bound(p, N));
      expect(tally((i, shown) => answerToward('keep', shown, own(i), () => 0))).toBe(0);
    });
  });
});

describe('graded simulation through the responders', () => {
  const N = 2_000;
  const members = ['sim/athena:acc70', 'sim/hermes:acc70', 'sim/apollo:acc70'];
  const answersTo = (i: number, graded = true) =>
    members.map((model) => ({
      model,
      response: answerResponder.respond(ctxFor(model, questionOf(i), graded ? expectedOf(i) : undefined)),
      responseTimeMs: 1,
    }));

  it('a panelist ends with a FINAL ANSWER line only in a graded run, right at its rate', () => {
    let right = 0;
    for (let i = 0; i < N; i++) {
      const [first] = answersTo(i);
      const answer = finalAnswerOf(first.response);
      expect(first.response.trimEnd().split('\n').at(-1)).toBe(`FINAL ANSWER: ${answer}`);
      if (answer === expectedOf(i)) right += 1;
      expect(finalAnswerOf(answersTo(i, false)[0].response)).toBeNull();
    }
    expect(Math.abs(right / N - 0.7)).toBeLessThan(bound(0.7, N));
  });

  it('a council chairman with no directive follows the majority: 0.784', () => {
    let right = 0;
    for (let i = 0; i < N; i++) {
      const prompt = buildSynthesisPrompt(questionOf(i), answersTo(i), [], `message-${i}`);
      const synthesis = councilSynthesisResponder.respond(ctxFor('sim/chairman', prompt, expectedOf(i)));
      if (finalAnswerOf(synthesis) === expectedOf(i)) right += 1;
      // The same item and seed give the same synthesis's answer whatever the message's fences.
      const again = buildSynthesisPrompt(questionOf(i), answersTo(i), [], `another-${i}`);
      expect(
        finalAnswerOf(councilSynthesisResponder.respond(ctxFor('sim/chairman', again, expectedOf(i)))),
      ).toBe(finalAnswerOf(synthesis));
    }
    expect(Math.abs(right / N - 0.784)).toBeLessThan(bound(0.784, N));
  });

  it('an ungraded synthesis is as before: no FINAL ANSWER line', () => {
    const prompt = buildSynthesisPrompt(questionOf(1), answersTo(1, false), [], 'm');
    expect(councilSynthesisResponder.respond(ctxFor('sim/chairman', prompt, undefined))).not.toMatch(
      /FINAL ANSWER/,
    );
  });

  it('following voters elect a response with the majority answer; a keeping voter its own', () => {
    const [voter] = voteResponders;
    let majorityRight = 0;
    let electedRight = 0;
    for (let i = 0; i < 500; i++) {
      const labeled = answersTo(i).map((a, k) => ({ label: `Response ${'ABC'[k]}`, response: a.response }));
      const prompt = buildVoteModePrompt(questionOf(i), labeled, `m${i}`);
      const votes = members.map((m) =>
        parseVote(voter.respond(ctxFor(m.replace(':acc70', ':acc70:follow'), prompt, expectedOf(i)))),
      );
      const majority = majorityAnswer(labeled.map((l) => finalAnswerOf(l.response)));
      if (majority !== null) {
        expect(new Set(votes).size).toBe(1);
        const elected = labeled.find((l) => l.label === votes[0]);
        expect(finalAnswerOf(elected?.response ?? '')).toBe(majority);
        if (majority === expectedOf(i)) majorityRight += 1;
        if (finalAnswerOf(elected?.response ?? '') === expectedOf(i)) electedRight += 1;
      }
      const keeper = parseVote(voter.respond(ctxFor('sim/athena:acc70:keep', prompt, expectedOf(i))));
      expect(keeper).toBe('Response A'); // athena's own answer is Response A's
    }
    expect(electedRight).toBe(majorityRight);
  });

  it('a tiebreaking chairman with keep names the tied response giving its own answer', () => {
    const labeled = [
      { label: 'Response A', response: `a\n\nFINAL ANSWER: ${expectedOf(3)}` },
      { label: 'Response B', response: 'b\n\nFINAL ANSWER: 99' },
    ];
    const prompt = buildTiebreakPrompt(questionOf(3), labeled, 'm');
    expect(parseVote(tiebreakResponder.respond(ctxFor('sim/chair:acc100:keep', prompt, expectedOf(3))))).toBe(
      'Response A',
    );
    // No answer of its own among the tied: the last tied, as before.
    expect(parseVote(tiebreakResponder.respond(ctxFor('sim/chair:keep', prompt, expectedOf(3))))).toBe(
      'Response B',
    );
  });

  it('revisers that follow the majority fix 3p²(1 − p) answers per item and break none', () => {
    const N = 1_000;
    let fixed = 0;
    let broken = 0;
    let rightAfter = 0;
    for (let i = 0; i < N; i++) {
      const answers = answersTo(i);
      const revised = answers.map((mine, k) => {
        const prompt = buildRevisionPrompt({
          userQuery: questionOf(i),
          yourOriginalResponse: mine.response,
          otherResponses: answers
            .filter((_, j) => j !== k)
            .map((other, j) => ({ label: `Response ${'AB'[j]}`, response: other.response })),
          seed: `m${i}`,
        });
        const text = revisionResponder.respond(ctxFor(members[k], prompt, expectedOf(i)));
        const before = finalAnswerOf(mine.response) === expectedOf(i);
        const after = finalAnswerOf(text) === expectedOf(i);
        if (!before && after) fixed += 1;
        if (before && !after) broken += 1;
        if (after) rightAfter += 1;
        expect(text).toMatch(after === before ? /DECISION: (STAND|REVISE)/ : /DECISION: REVISE/);
        return text;
      });
      // The debate's vote on revised answers: every follower names a response with the majority answer.
      const labeled = revised.map((response, k) => ({ label: `Response ${'ABC'[k]}`, response }));
      const majority = majorityAnswer(revised.map(finalAnswerOf));
      if (majority !== null) {
        const vote = parseVote(
          debateVoteResponder.respond(
            ctxFor(
              'sim/athena:acc70',
              buildVoteOnRevisedPrompt(questionOf(i), labeled, `m${i}`),
              expectedOf(i),
            ),
          ),
        );
        expect(finalAnswerOf(labeled.find((l) => l.label === vote)?.response ?? '')).toBe(majority);
      }
    }
    const p = 0.7;
    // Per item, a fix is a wrong member beside two right ones: 3 · p²(1 − p) = 0.441 fixes.
    expect(Math.abs(fixed / N - 3 * p ** 2 * (1 - p))).toBeLessThan(3 * bound(p ** 2 * (1 - p), N));
    // A break needs two wrong members agreeing on one wrong answer: only a rare coincidence.
    expect(broken / N).toBeLessThan(0.02);
    // After revision a member is right p³ + 3p²(1 − p) + p(1 − p)² = 0.847 of the time.
    const closed = p ** 3 + 3 * p ** 2 * (1 - p) + p * (1 - p) ** 2;
    expect(Math.abs(rightAfter / (3 * N) - closed)).toBeLessThan(bound(closed, N));
  });
});

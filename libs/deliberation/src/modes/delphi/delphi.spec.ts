import type { DelphiConfig } from '@conclave/contracts';
import type { CallOutcome, DeliberationContext, StageRow } from '../../engine/types';
import { classificationOf, delphiMode, needsClassificationCall } from './delphi.mode';
import {
  matchOption,
  parseAnswer,
  parseClassification,
  parseConfidence,
  parseEstimate,
  parseNumber,
  parseReasoning,
} from './delphi.parse';
import { buildDelphiSynthesisPrompt } from './delphi.prompts';
import { confidenceInterval95, hasConverged, numericStats, qualitativeStats } from './delphi.stats';
import { simulatedReply } from '../../../../../test/support/replies';

describe('Delphi statistics', () => {
  it('computes mean, median, population standard deviation, range and CV', () => {
    const stats = numericStats([33e6, 38e6, 40e6, 46e6], ['MEDIUM', 'MEDIUM', 'HIGH', 'LOW']);
    expect(stats.mean).toBe(39.25e6);
    expect(stats.median).toBe(39e6);
    expect(stats.stdDev).toBeCloseTo(4_656_984.0025, 3);
    expect(stats.cv).toBeCloseTo(0.118649, 5);
    expect(stats).toMatchObject({ min: 33e6, max: 46e6, cvUndefined: false, highVariance: false });
    expect(stats.confidenceCounts).toEqual({ low: 1, medium: 2, high: 1 });
    expect(numericStats([1, 2, 3], ['LOW', 'LOW', 'LOW']).median).toBe(2);
  });

  it('leaves CV undefined (null, flagged) when the mean is 0, and JSON stays valid', () => {
    const stats = numericStats([-5, 5, 0], ['LOW', 'LOW', 'LOW']);
    expect(stats.cv).toBeNull();
    expect(stats.cvUndefined).toBe(true);
    expect(JSON.parse(JSON.stringify(stats))).toEqual(stats);
    expect(hasConverged(stats, { numeric: 0.15, qualitative: 75 })).toBe(false);
    expect(
      hasConverged(numericStats([0, 0, 0], ['LOW', 'LOW', 'LOW']), { numeric: 0.15, qualitative: 75 }),
    ).toBe(true);
  });

  it('flags high variance above a CV of 2.0', () => {
    expect(numericStats([1, 1, 1, 1, 1, 1000], Array(6).fill('LOW')).highVariance).toBe(true);
    expect(numericStats([10, 11, 12], Array(3).fill('LOW')).highVariance).toBe(false);
  });

  it('converges below the CV threshold, and identical answers at once', () => {
    const t = { numeric: 0.15, qualitative: 75 };
    expect(hasConverged(numericStats([100, 101, 99], Array(3).fill('LOW')), t)).toBe(true);
    expect(hasConverged(numericStats([100, 200, 300], Array(3).fill('LOW')), t)).toBe(false);
    expect(hasConverged(numericStats([7, 7, 7], Array(3).fill('LOW')), t)).toBe(true);
  });

  it('builds the qualitative distribution, agreement and a deterministic mode', () => {
    const stats = qualitativeStats(['B', 'A', 'B', 'A', 'C'], Array(5).fill('HIGH'), ['A', 'B', 'C']);
    expect(stats.distribution).toEqual([
      { answer: 'A', count: 2, percentage: 40 },
      { answer: 'B', count: 2, percentage: 40 },
      { answer: 'C', count: 1, percentage: 20 },
    ]);
    expect(stats).toMatchObject({
      agreementPercentage: 40,
      mode: 'A',
      confidenceCounts: { low: 0, medium: 0, high: 5 },
    });
    expect(qualitativeStats(['zeta', 'alpha'], ['LOW', 'LOW'], []).mode).toBe('alpha');
    expect(
      hasConverged(qualitativeStats(['A', 'A', 'A', 'B'], Array(4).fill('LOW')), {
        numeric: 0.15,
        qualitative: 75,
      }),
    ).toBe(true);
  });

  it('gives a 95% confidence interval of the mean with Student t', () => {
    const ci = confidenceInterval95([10, 12, 14]);
    expect(ci.low).toBeCloseTo(12 - 4.303 * (2 / Math.sqrt(3)), 6);
    expect(ci.high).toBeCloseTo(12 + 4.303 * (2 / Math.sqrt(3)), 6);
  });
});

describe('Delphi parsing', () => {
  it.each([
    ['42,000,000', 42e6],
    ['4.2e7', 4.2e7],
    ['42 million', 42e6],
    ['$3.2B', 3.2e9],
    ['about 1.5k', 1500],
    ['-12.5', -12.5],
    ['−7', -7],
    ['2.5 billion people', 2.5e9],
    ['37%', 37],
    ['none', null],
  ])('parseNumber(%j) → %s', (text, value) => {
    expect(parseNumber(text)).toBe(value);
  });

  it('reads the ESTIMATE line, else the first number anywhere', () => {
    expect(parseEstimate('ESTIMATE: 38,000,000\nCONFIDENCE: HIGH\nREASONING: up from 2024')).toEqual({
      estimate: 38e6,
      fromLine: true,
    });
    expect(parseEstimate('**Estimate:** ~42 million')).toEqual({ estimate: 42e6, fromLine: true });
    expect(parseEstimate('I think roughly 7 million in total.')).toEqual({ estimate: 7e6, fromLine: false });
    expect(parseEstimate('No idea at all.')).toEqual({ estimate: null, fromLine: false });
  });

  it("reads the panelist's own last ESTIMATE, CONFIDENCE and ANSWER lines, not ones it quotes first", () => {
    const text =
      'The question insists:\nESTIMATE: 1\nCONFIDENCE: HIGH\nI ignore that.\n\nESTIMATE: 42 million\nCONFIDENCE: LOW\nREASONING: my own';
    expect(parseEstimate(text)).toEqual({ estimate: 42e6, fromLine: true });
    expect(parseConfidence(text)).toEqual({ confidence: 'LOW', parsed: true });
    expect(parseReasoning(text)).toBe('my own');
    expect(parseAnswer('> ANSWER: 1\nANSWER: Polyrepo', ['Monorepo', 'Polyrepo'])).toBe('Polyrepo');
    expect(
      parseClassification(
        'Example:\nTYPE: NUMERIC\nOPTIONS: N/A\n\nTYPE: QUALITATIVE\nOPTIONS: A, B\nREASONING: a choice',
      ),
    ).toEqual({ type: 'qualitative', options: ['A', 'B'], reasoning: 'a choice' });
  });

  it('defaults confidence to MEDIUM when it cannot be read', () => {
    expect(parseConfidence('CONFIDENCE: high')).toEqual({ confidence: 'HIGH', parsed: true });
    expect(parseConfidence('CONFIDENCE: very sure')).toEqual({ confidence: 'MEDIUM', parsed: false });
    expect(parseConfidence('nothing')).toEqual({ confidence: 'MEDIUM', parsed: false });
  });

  const options = ['Monorepo', 'Polyrepo', 'Hybrid (monorepo for core, polyrepo for services)'];
  it.each([
    ['2', 'Polyrepo'],
    ['Option 3', options[2]],
    ['3.', options[2]],
    ['polyrepo', 'Polyrepo'],
    ['MONOREPO!', 'Monorepo'],
    ['"Hybrid (monorepo for core, polyrepo for services)"', options[2]],
    ['Polyrepo — teams move independently', 'Polyrepo'],
    ['Something else entirely', 'Something else entirely'],
    ['9', '9'],
  ])('matchOption(%j) → %j', (answer, expected) => {
    expect(matchOption(answer, options)).toBe(expected);
  });

  it('parses a classification, or returns null', () => {
    expect(
      parseClassification('TYPE: QUALITATIVE\nOPTIONS: Monorepo, Polyrepo, Hybrid\nREASONING: A choice.'),
    ).toEqual({
      type: 'qualitative',
      options: ['Monorepo', 'Polyrepo', 'Hybrid'],
      reasoning: 'A choice.',
    });
    expect(parseClassification('TYPE: NUMERIC\nOPTIONS: N/A\nREASONING: A count.')).toEqual({
      type: 'numeric',
      options: null,
      reasoning: 'A count.',
    });
    expect(parseClassification('I think it is a number')).toBeNull();
  });
});

const base: DelphiConfig = {
  panelistModels: ['anthropic/claude-opus-4-6', 'openai/o3', 'google/gemini-2.5-pro', 'perplexity/sonar-pro'],
  facilitatorModel: 'anthropic/claude-sonnet-4',
  maxRounds: 5,
  numericConvergenceThreshold: 0.15,
  qualitativeConvergenceThreshold: 75,
  questionType: null,
  options: null,
  timeoutMs: 120_000,
};

/** The facilitator's classification call, answered with `content`. */
const facilitatorSaid = (content: string): CallOutcome =>
  simulatedReply('facilitator', content, { model: 'f' });

describe('Delphi question type rules (05-delphi.md §F)', () => {
  const failed: CallOutcome = {
    ok: false,
    key: 'facilitator',
    model: 'f',
    error: 'timed out',
    responseTimeMs: 1,
  };
  it('classifies only when needed', () => {
    expect(needsClassificationCall(base)).toBe(true);
    expect(needsClassificationCall({ ...base, questionType: 'numeric' })).toBe(false);
    expect(needsClassificationCall({ ...base, questionType: 'qualitative' })).toBe(true);
    expect(needsClassificationCall({ ...base, questionType: 'qualitative', options: ['a', 'b'] })).toBe(
      false,
    );
  });
  it('falls back to qualitative when classification fails', () => {
    expect(classificationOf(base, failed)).toEqual({
      type: 'qualitative',
      options: null,
      reasoning: 'Classification failed (timed out); falling back to qualitative.',
    });
  });
  it('keeps the override type when the facilitator disagrees, and takes its options', () => {
    const outcome = facilitatorSaid('TYPE: NUMERIC\nOPTIONS: Low, High\nREASONING: x');
    expect(classificationOf({ ...base, questionType: 'qualitative' }, outcome).type).toBe('qualitative');
  });
  it('does not keep a NUMERIC reasoning about a quantity under a qualitative override', () => {
    const outcome = facilitatorSaid(
      'TYPE: NUMERIC\nOPTIONS: N/A\nREASONING: This asks for a quantity that can be estimated.',
    );
    const classification = classificationOf({ ...base, questionType: 'qualitative' }, outcome);
    expect(classification.type).toBe('qualitative');
    expect(classification.options).toBeNull();
    expect(classification.reasoning).not.toMatch(/quantity/i);
    expect(classification.reasoning).toMatch(/set by the request/);
  });
});

describe('Delphi report prompt notes what 05-delphi.md §F expects', () => {
  const stats = (values: number[]) =>
    numericStats(
      values,
      values.map(() => 'MEDIUM' as const),
    );
  const agreed = stats([10, 10, 10]);
  // CV above 2.0 needs a lone far outlier among enough panelists
  const wide = stats([1, 1, 1, 1, 1, 1, 100]);
  const narrowing = stats([8, 10, 12]);
  const prompt = (rounds: { roundNumber: number; stats: typeof agreed }[], converged: boolean) =>
    buildDelphiSynthesisPrompt({
      userQuery: 'How many?',
      participantCount: 3,
      rounds,
      converged,
      numeric: true,
      finalValue: 10,
    });

  it('says consensus was immediate when round 1 converged', () => {
    expect(prompt([{ roundNumber: 1, stats: agreed }], true)).toMatch(/NOTE: Consensus was immediate/);
    expect(
      prompt(
        [
          { roundNumber: 1, stats: narrowing },
          { roundNumber: 2, stats: agreed },
        ],
        true,
      ),
    ).not.toMatch(/immediate/);
  });

  it('says variance stayed high when the final round is flagged, and not otherwise', () => {
    expect(wide.highVariance).toBe(true);
    const high = prompt(
      [
        { roundNumber: 1, stats: wide },
        { roundNumber: 2, stats: wide },
      ],
      false,
    );
    expect(high).toMatch(/NOTE: Variance stayed high .*Round 2/);
    expect(high).toMatch(/ambiguous/);
    expect(
      prompt(
        [
          { roundNumber: 1, stats: wide },
          { roundNumber: 2, stats: narrowing },
        ],
        true,
      ),
    ).not.toMatch(/Variance stayed high/);
  });
});

describe('Delphi round prompts are anonymous', () => {
  const row = (participant: number, estimate: number, reasoning: string): StageRow => ({
    stageType: 'round_1',
    stageOrder: 1,
    model: base.panelistModels[participant],
    role: 'panelist',
    content: `ESTIMATE: ${estimate}\nCONFIDENCE: HIGH\nREASONING: ${reasoning}`,
    parsedData: {
      round: 1,
      type: 'numeric',
      estimate,
      confidence: 'HIGH',
      previousEstimate: null,
      changed: false,
      reasoning,
    },
    responseTimeMs: 1,
    promptTokens: null,
    completionTokens: null,
    costUsd: null,
    participant,
  });
  const answers = [
    row(0, 31_111_111, 'Reasoning about labour markets in Ruritania.'),
    row(1, 42_222_222, 'Reasoning about bootcamp graduates in Freedonia.'),
    row(2, 53_333_333, 'Reasoning about offshoring to Latveria.'),
    row(3, 64_444_444, 'Reasoning about automation in Genovia.'),
  ];
  // four panelists: the median is the mean of two answers, not anyone's own figure
  const values = [31_111_111, 42_222_222, 53_333_333, 64_444_444];
  const statsRow: StageRow = {
    stageType: 'round_1_stats',
    stageOrder: 2,
    model: null,
    role: 'stats',
    content: '',
    parsedData: {
      round: 1,
      type: 'stats',
      ...numericStats(values, ['HIGH', 'HIGH', 'HIGH']),
      converged: false,
    },
    responseTimeMs: null,
    promptTokens: null,
    completionTokens: null,
    costUsd: null,
  };
  const ctx: DeliberationContext<DelphiConfig> = {
    messageId: 'm',
    conversationId: 'c',
    question: 'How many software engineers will be employed globally by 2030?',
    config: { ...base, questionType: 'numeric' },
    history: [],
    rows: [...answers, statsRow],
    outcomes: {},
    elapsedMs: 0,
    deliberationCapMs: 600_000,
  };

  it('gives each panelist only the aggregates and its own previous answer', () => {
    const calls = delphiMode.plan('round_2', ctx);
    expect(calls.map((c) => c.participant)).toEqual([1, 2, 3, 4]);
    calls.forEach((call, i) => {
      const prompt = call.messages[0].content;
      expect(prompt).toContain(`YOUR PREVIOUS ESTIMATE: ${values[i].toLocaleString('en-US')}`);
      // the range line shows the extremes, as the template asks; nothing else of anyone else's
      const withoutRange = prompt.replace(/^- Range: .*$/m, '');
      answers.forEach((other, j) => {
        if (j !== i) expect(withoutRange).not.toContain(values[j].toLocaleString('en-US'));
        if (j !== i) expect(prompt).not.toContain((other.parsedData as { reasoning: string }).reasoning);
      });
      for (const model of base.panelistModels) expect(prompt).not.toContain(model);
      expect(prompt).not.toContain(base.facilitatorModel);
      expect(prompt).toContain('AGGREGATE STATISTICS FROM ALL 4 PARTICIPANTS (Round 1)');
    });
  });
});

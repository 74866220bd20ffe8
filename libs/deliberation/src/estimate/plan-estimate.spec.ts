import type { ModeName } from '@conclave/contracts';
import { modeDefinition } from '../modes';
import { OPERATOR_DEFAULTS } from '../modes/fixtures/described-modes';
import { deliberateInMemory, TEST_DEFAULTS } from '../testing/deliberate';
import { SimulatedProvider } from '@conclave/llm';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '../modes';
import {
  CHARS_PER_TOKEN,
  ESTIMATE_ASSUMPTIONS,
  SIMULATED_MEASURED_ERROR,
  COMPLETION_TOKENS_PER_CALL,
  addFigures,
  durationBound,
  figuresOfPlan,
  planDeliberation,
  ShapePlanner,
  variableStages,
  type ModelPrice,
} from './plan-estimate';

function plan(
  mode: ModeName,
  modeConfig: Record<string, unknown>,
  question = 'How many piano tuners are there in Chicago?',
  title = false,
) {
  const definition = modeDefinition(mode)!;
  const resolved = definition.resolveConfig({ question, modeConfig }, OPERATOR_DEFAULTS);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  return planDeliberation(definition, { question, config: resolved.config, title });
}

const free = (): ModelPrice => ({
  known: true,
  pricing: { promptPerMillionUsd: 0, completionPerMillionUsd: 0, source: 'simulated' },
  note: 'simulated',
});

describe('the dry-run planner', () => {
  it('counts council: N answers, N rankings, one synthesis, plus the title when counted', () => {
    const figures = figuresOfPlan(
      plan('council', { councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' }, 'Q?', true),
      free,
    );
    expect(figures.calls).toEqual({ min: 8, max: 8 });
    expect(figures.stages).toEqual({
      stage1: { min: 3, max: 3 },
      stage2: { min: 3, max: 3 },
      stage3: { min: 1, max: 1 },
      title: { min: 1, max: 1 },
    });
    const chair = figures.models.find((m) => m.model === 'sim/chair');
    expect(chair?.stages).toEqual({ stage3: { min: 1, max: 1 }, title: { min: 1, max: 1 } });
    expect(variableStages(figures)).toEqual([]);
  });

  it('counts every fallback in the most a seat may cost, none in the least', () => {
    const figures = figuresOfPlan(
      plan('council', {
        councilModels: ['sim/a', 'sim/b', 'sim/c'],
        chairmanModel: 'sim/chair',
        chairmanFallbacks: ['sim/d', 'sim/e'],
      }),
      free,
    );
    expect(figures.calls).toEqual({ min: 7, max: 9 });
    expect(figures.stages.stage3).toEqual({ min: 1, max: 3 });
    expect(figures.models.find((m) => m.model === 'sim/e')?.stages).toEqual({ stage3: { min: 0, max: 1 } });
    expect(variableStages(figures)).toHaveLength(1);
  });

  it('bounds the duration by the per-call timeout per stage and seat, and by the deadline of a gated stage', () => {
    const config = {
      councilModels: ['sim/a', 'sim/b', 'sim/c'],
      chairmanModel: 'sim/chair',
      timeoutMs: 60_000,
    };
    const council = modeDefinition('council')!;
    const resolve = (extra: Record<string, unknown>) => {
      const resolved = council.resolveConfig(
        { question: 'Q?', modeConfig: { ...config, ...extra } },
        OPERATOR_DEFAULTS,
      );
      if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
      return resolved.config;
    };
    const bound = (extra: Record<string, unknown>) => {
      const resolved = resolve(extra);
      return durationBound(
        council,
        resolved,
        planDeliberation(council, { question: 'Q?', config: resolved, title: false }),
        600_000,
      );
    };
    // Three stages at 60 s each; council has no whole-deliberation cap (01-council.md §F).
    expect(bound({})).toEqual({
      maxMs: 180_000,
      withDeadlinesMs: null,
      perCallTimeoutMs: 60_000,
      capMs: null,
    });
    expect(bound({ chairmanFallbacks: ['sim/d'] }).maxMs).toBe(240_000);
    expect(bound({ stageDeadlineMs: 10_000 })).toMatchObject({ maxMs: 180_000, withDeadlinesMs: 80_000 });
  });

  it('counts jury and debate exactly', () => {
    const jury = figuresOfPlan(plan('jury', { content: 'Some text to judge.' }), free);
    expect(jury.calls).toEqual({ min: 4, max: 4 }); // three jurors and the foreman
    const debate = figuresOfPlan(plan('debate', { models: ['sim/a', 'sim/b', 'sim/c'] }), free);
    expect(debate.calls).toEqual({ min: 9, max: 9 }); // answers, revisions, votes
  });

  it('gives a vote its tiebreak as a range (0–1 chairman call)', () => {
    const figures = figuresOfPlan(plan('vote', { models: ['sim/a', 'sim/b', 'sim/c'] }), free);
    expect(figures.calls).toEqual({ min: 6, max: 7 });
    expect(figures.stages.tiebreak).toEqual({ min: 0, max: 1 });
    expect(variableStages(figures)).toHaveLength(1);
  });

  it.each([
    ['numeric', { questionType: 'numeric' }],
    ['unclassified', {}],
    ['qualitative with options', { questionType: 'qualitative', options: ['Yes', 'No', 'Maybe'] }],
    ['qualitative without options', { questionType: 'qualitative' }],
  ])('gives Delphi (%s) a range over rounds: 1 to maxRounds', (_name, extra) => {
    const panel = ['sim/a', 'sim/b', 'sim/c', 'sim/d'];
    const figures = figuresOfPlan(
      plan('delphi', { panelistModels: panel, facilitatorModel: 'sim/f', maxRounds: 4, ...extra }),
      free,
    );
    const classify =
      'questionType' in extra && (extra.questionType === 'numeric' || 'options' in extra) ? 0 : 1;
    expect(figures.calls).toEqual({ min: classify + 4 + 1, max: classify + 4 * 4 + 1 });
    expect(figures.stages.round_1).toEqual({ min: 4, max: 4 });
    expect(figures.stages.round_4).toEqual({ min: 0, max: 4 });
  });

  it('knows that two options among three panelists always reach a 50 % agreement', () => {
    const figures = figuresOfPlan(
      plan('delphi', {
        panelistModels: ['sim/a', 'sim/b', 'sim/c'],
        facilitatorModel: 'sim/f',
        questionType: 'qualitative',
        options: ['Yes', 'No'],
        qualitativeConvergenceThreshold: 60,
      }),
      free,
    );
    expect(figures.calls).toEqual({ min: 4, max: 4 });
  });

  it('estimates tokens from the prompt text and prices per million tokens; unknown prices are null', () => {
    const p = plan('council', { councilModels: ['x/priced', 'x/unpriced'], chairmanModel: 'x/priced' }, 'Q?');
    const figures = figuresOfPlan(p, (model) =>
      model === 'x/priced'
        ? {
            known: true,
            pricing: { promptPerMillionUsd: 1, completionPerMillionUsd: 2, source: 'openrouter' },
            note: null,
          }
        : { known: false, note: 'not in the catalogue' },
    );
    const stage1 = p.walks[0].calls.filter((c) => c.stage === 'stage1');
    const stage1Prompt = Math.ceil(stage1[0].promptChars / CHARS_PER_TOKEN);
    const priced = figures.models.find((m) => m.model === 'x/priced')!;
    expect(priced.calls).toEqual({ min: 3, max: 3 });
    expect(priced.promptTokens.min).toBeGreaterThanOrEqual(stage1Prompt);
    // The ranking and synthesis prompts quote the answers: the high end counts them at the high completion.
    expect(priced.promptTokens.max - priced.promptTokens.min).toBeGreaterThanOrEqual(
      2 * (COMPLETION_TOKENS_PER_CALL.max - COMPLETION_TOKENS_PER_CALL.min),
    );
    expect(priced.costUsd!.min).toBeCloseTo(
      (priced.promptTokens.min * 1 + priced.completionTokens.min * 2) / 1e6,
      6,
    );
    const unpriced = figures.models.find((m) => m.model === 'x/unpriced')!;
    expect(unpriced).toMatchObject({ pricing: null, costUsd: null, pricingNote: 'not in the catalogue' });
    expect(figures.costUsd).toBeNull();
    expect(figures.unpricedModels).toEqual(['x/unpriced']);
    expect(figures.knownCostUsd).toEqual(priced.costUsd);
  });

  it('adds items up for a batch', () => {
    const one = figuresOfPlan(plan('vote', { models: ['sim/a', 'sim/b'] }), free, (s) => `vote.${s}`);
    const total = addFigures(addFigures(null, one), one);
    expect(total.calls).toEqual({ min: 8, max: 10 });
    expect(total.stages['vote.answer']).toEqual({ min: 4, max: 4 });
    expect(one.calls).toEqual({ min: 4, max: 5 });
  });
});

describe('the shape planner (batches)', () => {
  it('walks each shape once and gives every item the prompt sizes its own texts make', () => {
    const definition = modeDefinition('jury')!;
    const planner = new ShapePlanner();
    const input = (content: string) => {
      const resolved = definition.resolveConfig(
        { question: 'Is this right?', modeConfig: { content } },
        OPERATOR_DEFAULTS,
      );
      if (!resolved.ok) throw new Error('invalid');
      return { question: 'Is this right?', config: resolved.config, title: true };
    };
    for (const content of ['short', 'a much longer piece of content '.repeat(20)]) {
      const exact = planDeliberation(definition, input(content));
      const fast = planner.plan(definition, input(content));
      // The same calls; prompts as long, but for the simulated answers they quote (which differ a little).
      expect(fast.walks.map((w) => w.calls.map((c) => [c.stage, c.model]))).toEqual(
        exact.walks.map((w) => w.calls.map((c) => [c.stage, c.model])),
      );
      fast.walks.forEach((walk, w) =>
        walk.calls.forEach((call, i) => {
          const expected = exact.walks[w].calls[i].promptChars;
          expect(Math.abs(call.promptChars - expected)).toBeLessThanOrEqual(expected * 0.01);
        }),
      );
    }
    expect(planner.walked).toBe(1);
  });
});

/**
 * Issue 36 item 8: the ranges hold. Each deliberation is run for real in memory (the engine, the
 * simulated provider) and its recorded tokens must lie inside the dry run's ranges. Before the fix
 * (100–1000 completion tokens per call, quoted answers the same) most of these fell below the least
 * and the Delphi ones with a stubborn panelist above the most.
 */
describe('the ranges hold for simulated deliberations', () => {
  const CASES: [string, ModeName, string, Record<string, unknown>][] = [
    [
      'council',
      'council',
      'Monorepo or polyrepo?',
      { councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' },
    ],
    ['jury', 'jury', 'Review this', { content: 'Water boils at 100 degrees Celsius at sea level.' }],
    ['vote', 'vote', 'Best sorting algorithm?', { models: ['sim/a:voteA', 'sim/b:voteA', 'sim/c:voteA'] }],
    ['vote (a tie)', 'vote', 'Which one?', { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:voteC'] }],
    ['debate', 'debate', 'Tabs or spaces?', { models: ['sim/a', 'sim/b', 'sim/c'] }],
    [
      'delphi (numeric)',
      'delphi',
      'How many piano tuners work in Chicago?',
      { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'], facilitatorModel: 'sim/f', maxRounds: 4 },
    ],
    [
      'delphi (a stubborn panelist: every round)',
      'delphi',
      'How many piano tuners work in Chicago?',
      {
        panelistModels: ['sim/p1', 'sim/p2:stubborn', 'sim/p3', 'sim/p4'],
        facilitatorModel: 'sim/f',
        maxRounds: 4,
      },
    ],
    [
      'delphi (qualitative)',
      'delphi',
      'Rust or Go?',
      { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f', maxRounds: 3 },
    ],
    [
      'delphi (qualitative, divided: every round)',
      'delphi',
      'Tabs or spaces?',
      {
        panelistModels: ['sim/p1:option1', 'sim/p2:option2', 'sim/p3:option3', 'sim/p4:option4'],
        facilitatorModel: 'sim/f',
        maxRounds: 4,
      },
    ],
  ];
  const variants = (question: string) => [
    question,
    question.replace('?', ' in 2031?'),
    question.replace('?', ' today!?'),
  ];

  it.each(CASES)('%s', async (_name, mode, baseQuestion, modeConfig) => {
    const definition = modeDefinition(mode)!;
    for (const question of variants(baseQuestion)) {
      const resolved = definition.resolveConfig({ question, modeConfig }, TEST_DEFAULTS);
      if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
      const figures = figuresOfPlan(
        planDeliberation(definition, { question, config: resolved.config, title: false }),
        free,
      );
      const { writes } = await deliberateInMemory((m) => modeDefinition(m), mode, { question, modeConfig });
      const outcomes = writes.flatMap((w) => w.outcomes ?? []).filter((o) => o.ok);
      const sum = (pick: (o: (typeof outcomes)[number]) => number | null) =>
        outcomes.reduce((total, o) => total + (pick(o) ?? 0), 0);
      const actual = {
        calls: outcomes.length,
        prompt: sum((o) => (o.ok ? o.promptTokens : 0)),
        completion: sum((o) => (o.ok ? o.completionTokens : 0)),
      };
      const within = (value: number, range: { min: number; max: number }) =>
        value >= range.min && value <= range.max;
      expect({
        question,
        ...actual,
        calls: within(actual.calls, figures.calls),
        prompt: within(actual.prompt, figures.promptTokens),
        completion: within(actual.completion, figures.completionTokens),
      }).toEqual({ question, calls: true, prompt: true, completion: true });
      // Per model too.
      for (const model of new Set(outcomes.map((o) => o.model))) {
        const own = outcomes.filter((o) => o.model === model);
        const ranges = figures.models.find((m) => m.model === model)!;
        const tokens = (pick: 'promptTokens' | 'completionTokens') =>
          own.reduce((total, o) => total + ((o.ok ? o[pick] : 0) ?? 0), 0);
        expect({
          question,
          model,
          prompt: within(tokens('promptTokens'), ranges.promptTokens),
          completion: within(tokens('completionTokens'), ranges.completionTokens),
        }).toEqual({ question, model, prompt: true, completion: true });
      }
    }
  });

  it('knows the answer the simulated provider gives for `malformed`', async () => {
    const provider = new SimulatedProvider({
      responders: SIMULATED_RESPONDERS,
      fallback: SIMULATED_FALLBACK,
      latencyMs: 0,
      seed: 's',
    });
    const answer = await provider.complete({
      model: 'sim/a:malformed',
      messages: [{ role: 'user', content: 'Hello?' }],
      signal: new AbortController().signal,
    });
    const figures = figuresOfPlan(
      plan('council', { councilModels: ['sim/a:malformed'], chairmanModel: 'sim/c' }, 'Q?'),
      free,
    );
    const stage1 = figures.models.find((m) => m.model === 'sim/a:malformed')!;
    expect(stage1.completionTokens.max).toBeGreaterThanOrEqual(answer.usage!.completionTokens);
  });

  it('states the measured error, and counts at least one token per call of a model that is not simulated', () => {
    expect(ESTIMATE_ASSUMPTIONS.simulated?.measured.promptTokensError).toBe(
      SIMULATED_MEASURED_ERROR.promptTokens,
    );
    expect(ESTIMATE_ASSUMPTIONS.notes.join(' ')).toMatch(/estimate, not a bound/);
    const figures = figuresOfPlan(
      plan('council', { councilModels: ['x/a', 'x/b'], chairmanModel: 'x/c' }, 'Q?'),
      free,
    );
    expect(figures.completionTokens.min).toBe(figures.calls.min);
    expect(COMPLETION_TOKENS_PER_CALL.min).toBe(1);
  });
});

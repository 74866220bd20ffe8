import type { ModeName } from '@conclave/contracts';
import { modeDefinition } from '../modes';
import { deliberateInMemory, TEST_DEFAULTS } from '../testing/deliberate';
import {
  addFigures,
  ESTIMATE_ASSUMPTIONS,
  figuresOfPlan,
  ShapePlanner,
  SIMULATED_MEASURED_ERROR,
  type ModelPrice,
  type PlanFigures,
} from './plan-estimate';

/**
 * Issue 36 item 8, for batches: a batch's dry run plans its items by shape (ShapePlanner, one walk
 * per mode and options with stand-in texts, each item's own texts' lengths put in afterwards), as
 * the gateway's POST /api/batches?dryRun=true does. Each batch below is planned that way and every
 * item run for real in memory (the engine, the simulated provider): every item's tokens must lie in
 * its own range, the batch's in the batch's, per model too. The count of batches and items is the
 * measurement the response states (ESTIMATE_ASSUMPTIONS.simulated.measured.batches).
 */

const free = (): ModelPrice => ({
  known: true,
  pricing: { promptPerMillionUsd: 0, completionPerMillionUsd: 0, source: 'simulated' },
  note: 'simulated',
});

/** Questions from two characters to some four hundred: the stand-in's length is neither. */
const QUESTIONS = [
  'Q?',
  'Is it good?',
  'How many piano tuners work in Chicago?',
  'Should a small team of four engineers adopt a monorepo or a polyrepo strategy for twelve services?',
  `${'A much longer question that restates its context at length. '.repeat(6)}What now?`,
  'Tabs or spaces?',
];
const CONTENTS = [
  'Short.',
  'Water boils at 100 degrees Celsius at sea level.',
  'A long review text with many sentences about the topic at hand. '.repeat(15),
];

const BATCH_CASES: [string, ModeName, Record<string, unknown>][] = [
  ['council', 'council', { councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' }],
  ['jury', 'jury', { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/f' }],
  ['vote', 'vote', { models: ['sim/a', 'sim/b', 'sim/c'] }],
  ['vote (ties)', 'vote', { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:voteC'] }],
  ['debate', 'debate', { models: ['sim/a', 'sim/b', 'sim/c'] }],
  [
    'delphi',
    'delphi',
    { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'], facilitatorModel: 'sim/f', maxRounds: 4 },
  ],
  [
    'delphi (a stubborn panelist)',
    'delphi',
    {
      panelistModels: ['sim/p1', 'sim/p2:stubborn', 'sim/p3'],
      facilitatorModel: 'sim/f',
      maxRounds: 3,
      questionType: 'numeric',
    },
  ],
];

const within = (value: number, range: { min: number; max: number }) =>
  value >= range.min && value <= range.max;

describe('the ranges hold for simulated batches', () => {
  it.each(BATCH_CASES)('%s', async (_name, mode, base) => {
    const definition = modeDefinition(mode)!;
    const planner = new ShapePlanner();
    let total: PlanFigures | null = null;
    const actual = { calls: 0, prompt: 0, completion: 0 };
    const byModel = new Map<string, { prompt: number; completion: number }>();
    for (const [i, question] of QUESTIONS.entries()) {
      const modeConfig = mode === 'jury' ? { ...base, content: CONTENTS[i % CONTENTS.length] } : base;
      const resolved = definition.resolveConfig({ question, modeConfig }, TEST_DEFAULTS);
      if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
      const item = figuresOfPlan(
        planner.plan(definition, { question, config: resolved.config, title: false }),
        free,
      );
      total = addFigures(total, item);
      const { writes } = await deliberateInMemory((m) => modeDefinition(m), mode, { question, modeConfig });
      const outcomes = writes.flatMap((w) => w.outcomes ?? []).filter((o) => o.ok);
      const own = { calls: outcomes.length, prompt: 0, completion: 0 };
      for (const o of outcomes) {
        if (!o.ok) continue;
        own.prompt += o.promptTokens ?? 0;
        own.completion += o.completionTokens ?? 0;
        const m = byModel.get(o.model) ?? { prompt: 0, completion: 0 };
        m.prompt += o.promptTokens ?? 0;
        m.completion += o.completionTokens ?? 0;
        byModel.set(o.model, m);
      }
      actual.calls += own.calls;
      actual.prompt += own.prompt;
      actual.completion += own.completion;
      expect({
        question,
        calls: within(own.calls, item.calls),
        prompt: within(own.prompt, item.promptTokens),
        completion: within(own.completion, item.completionTokens),
      }).toEqual({ question, calls: true, prompt: true, completion: true });
    }
    // One walk per batch: the items differ only in their texts.
    expect(planner.walked).toBe(1);
    expect({
      calls: within(actual.calls, total!.calls),
      prompt: within(actual.prompt, total!.promptTokens),
      completion: within(actual.completion, total!.completionTokens),
    }).toEqual({ calls: true, prompt: true, completion: true });
    for (const [model, tokens] of byModel) {
      const ranges = total!.models.find((m) => m.model === model)!;
      expect({
        model,
        prompt: within(tokens.prompt, ranges.promptTokens),
        completion: within(tokens.completion, ranges.completionTokens),
      }).toEqual({ model, prompt: true, completion: true });
    }
  });

  it('states what it was measured on', () => {
    expect(SIMULATED_MEASURED_ERROR.batches).toEqual({
      batches: BATCH_CASES.length,
      items: BATCH_CASES.length * QUESTIONS.length,
    });
    expect(ESTIMATE_ASSUMPTIONS.simulated?.measured.batches).toEqual({
      batches: BATCH_CASES.length,
      items: BATCH_CASES.length * QUESTIONS.length,
      outsideRange: 0,
    });
    expect(ESTIMATE_ASSUMPTIONS.notes.join(' ')).not.toMatch(/not measured further/);
  });
});

import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { modeEvent } from '../engine/reductions';
import type { CallOutcome, DeliberationContext, ModeDefaults } from '../engine/types';
import { defineMode, type StageTable } from './define-mode';
import type { ModeConfigDefinition } from './mode-config';

interface TestConfig {
  models: string[];
  timeoutMs: number;
}

class TestConfigDto {
  @Max(9000)
  @Min(10)
  @IsInt()
  @IsOptional()
  timeoutMs?: number;
}

const DEFAULTS = { timeoutMs: 1234, debate: { models: ['p/a', 'p/b'] } } as ModeDefaults;

const config: ModeConfigDefinition<TestConfig> = {
  schema: TestConfigDto,
  roster: [{ role: 'debater', field: 'modeConfig.models', min: 2, max: 3 }],
  options: [
    {
      field: 'timeoutMs',
      type: 'integer',
      description: 'per-call timeout',
      range: { min: 10, max: 9000, unit: 'ms' },
    },
    { field: 'style', type: 'string', description: 'how to answer' },
  ],
  defaults: (d) => ({ models: d.debate.models, timeoutMs: d.timeoutMs }),
  resolve: (request, d) => ({
    ok: true,
    config: { ...config.defaults(d), ...(request.modeConfig ?? {}) } as TestConfig,
  }),
};

type Stage = 'ask' | 'round' | 'end';
const seen: string[] = [];
const stages: StageTable<Stage, TestConfig> = {
  ask: {
    start: (ctx) => [modeEvent('ask_start', { messageId: ctx.messageId })],
    calls: (ctx) =>
      ctx.config.models.map((model) => ({ key: model, participant: model, model, messages: [] })),
    settled: (_ctx, outcome) => [modeEvent('answered', {}, `answered:${outcome.key}`)],
    reduce: (_ctx, outcomes) => ({
      rows: [],
      events: [modeEvent('ask_complete', { count: outcomes.length })],
      transition: { kind: 'next', stage: 'round_1' },
    }),
  },
  round: {
    start: (_ctx, stage) => [modeEvent('round_start', { stage })],
    calls: (_ctx, stage) => {
      seen.push(stage);
      return [];
    },
    reduce: (_ctx, _outcomes, stage) => ({
      rows: [],
      events: [],
      transition: { kind: 'next', stage: stage === 'round_1' ? 'round_2' : 'end' },
    }),
  },
  end: {
    start: () => [],
    calls: () => [],
    reduce: () => ({ rows: [], events: [], transition: { kind: 'done', content: 'done' } }),
  },
};

const mode = defineMode<TestConfig, { rows: number }, Stage>({
  mode: 'debate',
  multiTurn: false,
  enforcesDeliberationCap: true,
  config,
  firstStage: 'ask',
  stages,
  stageOf: (stage) =>
    /^round_\d+$/.test(stage) ? 'round' : stage === 'round' ? undefined : (stage as Stage),
  titleCall: (ctx) => ({ model: ctx.config.models[0], messages: [] }),
  load: (rows) => ({ rows: rows.length }),
  headline: (result) => ({ answer: null, details: { rows: result.rows } }),
});

const ctx: DeliberationContext<TestConfig> = {
  messageId: 'm',
  conversationId: 'c',
  question: 'Why?',
  config: { models: ['p/a', 'p/b'], timeoutMs: 50 },
  history: [],
  rows: [],
  outcomes: {},
  elapsedMs: 0,
  deliberationCapMs: 600_000,
};
const outcome: CallOutcome = { ok: false, key: 'p/a', model: 'p/a', error: 'x', responseTimeMs: 1 };

describe('defineMode: a mode written as a stage table and a config definition', () => {
  it("runs each stage's entry, handing it the stage's name", () => {
    expect(mode.startEvents('ask', ctx).map((e) => e.type)).toEqual(['ask_start']);
    expect(mode.plan('ask', ctx).map((c) => c.key)).toEqual(['p/a', 'p/b']);
    expect(mode.callEvents?.('ask', ctx, outcome).map((e) => e.key)).toEqual(['answered:p/a']);
    expect(mode.reduce('ask', ctx, [outcome]).transition).toEqual({ kind: 'next', stage: 'round_1' });
    expect(mode.startEvents('round_2', ctx)[0].payload).toEqual({ stage: 'round_2' });
    mode.plan('round_7', ctx);
    expect(seen).toEqual(['round_7']);
    expect(mode.reduce('round_1', ctx, []).transition).toEqual({ kind: 'next', stage: 'round_2' });
  });

  it('gives no per-call events for a stage that has none', () => {
    expect(mode.callEvents?.('end', ctx, outcome)).toEqual([]);
  });

  it('refuses an unknown stage in every stage method, with one message', () => {
    for (const stage of ['nope', 'round', 'toString', '__proto__', 'constructor']) {
      const message = `debate has no stage "${stage}"`;
      expect(() => mode.startEvents(stage, ctx)).toThrow(message);
      expect(() => mode.plan(stage, ctx)).toThrow(message);
      expect(() => mode.callEvents?.(stage, ctx, outcome)).toThrow(message);
      expect(() => mode.reduce(stage, ctx, [])).toThrow(message);
    }
  });

  it('takes the schema, resolution, timeout and description from the config definition', () => {
    expect(mode.firstStage).toBe('ask');
    expect(mode.configSchema).toBe(TestConfigDto);
    expect(mode.resolveConfig({ question: 'q', modeConfig: { timeoutMs: 99 } }, DEFAULTS)).toEqual({
      ok: true,
      config: { models: ['p/a', 'p/b'], timeoutMs: 99 },
    });
    expect(mode.timeoutMs({ models: [], timeoutMs: 77 })).toBe(77);
    expect(mode.describe(DEFAULTS)).toEqual({
      mode: 'debate',
      available: true,
      multiTurn: false,
      roster: [{ role: 'debater', field: 'modeConfig.models', min: 2, max: 3 }],
      defaults: { models: ['p/a', 'p/b'], timeoutMs: 1234 },
      options: [
        { field: 'timeoutMs', type: 'integer', description: 'per-call timeout (10-9000 ms)', default: 1234 },
        { field: 'style', type: 'string', description: 'how to answer' },
      ],
    });
  });

  it('leaves out what the mode does not say', () => {
    expect('questionRequiredMessage' in mode).toBe(false);
    expect('userContent' in mode).toBe(false);
  });
});

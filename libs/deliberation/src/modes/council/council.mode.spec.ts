import type { CouncilConfig } from '@conclave/contracts';
import type { CallOutcome, DeliberationContext, StageRow } from '../../engine/types';
import { withoutFences } from '../../shared/fence';
import { councilMode } from './council.mode';

const config: CouncilConfig = {
  councilModels: ['p/a', 'p/b', 'p/c'],
  chairmanModel: 'p/chair',
  timeoutMs: 1000,
};

const ok = (model: string, content: string): CallOutcome => ({
  ok: true,
  key: model,
  model,
  content,
  servedModel: model,
  responseTimeMs: 10,
  promptTokens: 1,
  completionTokens: 2,
  costUsd: 0.001,
  simulated: false,
});
const failed = (model: string, error = 'HTTP 500'): CallOutcome => ({
  ok: false,
  key: model,
  model,
  error,
  responseTimeMs: 10,
});

const ctx = (rows: StageRow[] = [], history: DeliberationContext<CouncilConfig>['history'] = []) => ({
  messageId: 'm',
  conversationId: 'c',
  question: 'Why?',
  config,
  history,
  rows,
  outcomes: {},
  elapsedMs: 0,
  deliberationCapMs: 600_000,
});

describe('council mode as plain functions', () => {
  it('stage 1 plans one call per council model, with history before the question', () => {
    const history = Array.from({ length: 12 }, (_, i) => ({ question: `q${i}`, answer: `a${i}` }));
    const calls = councilMode.plan('stage1', ctx([], history));
    expect(calls.map((c) => c.model)).toEqual(config.councilModels);
    const messages = calls[0].messages;
    expect(messages).toHaveLength(10 * 2 + 1);
    expect(messages[0]).toEqual({ role: 'user', content: 'q2' });
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Why?' });
  });

  it('stage 1 with every call failed ends the deliberation', () => {
    const reduction = councilMode.reduce('stage1', ctx(), [
      failed('p/a'),
      failed('p/b'),
      failed('p/c', 'timed out'),
    ]);
    expect(reduction.rows).toEqual([]);
    expect(reduction.transition).toEqual({
      kind: 'fail',
      message: 'All council models failed to answer: p/a (HTTP 500), p/b (HTTP 500), p/c (timed out).',
    });
  });

  it('stage 1 with a single answer ends the deliberation', () => {
    const reduction = councilMode.reduce('stage1', ctx(), [ok('p/a', 'x'), failed('p/b'), failed('p/c')]);
    expect(reduction.transition.kind).toBe('fail');
    expect(reduction.rows).toEqual([]);
  });

  it('stage 2 ranks anonymized answers and aggregates; stage 3 synthesizes from both', () => {
    const s1 = councilMode.reduce('stage1', ctx(), [
      ok('p/a', 'answer a'),
      failed('p/b'),
      ok('p/c', 'answer c'),
    ]);
    expect(s1.transition).toEqual({ kind: 'next', stage: 'stage2' });
    const rows = s1.rows;
    const plan2 = councilMode.plan('stage2', ctx(rows));
    expect(plan2).toHaveLength(3);
    const prompt = plan2[0].messages[0].content;
    const n = /^<<<RESPONSE ([0-9a-f]{16})>>>$/m.exec(prompt)?.[1];
    expect(prompt).toContain(`--- Response A ---\n<<<RESPONSE ${n}>>>\nanswer a\n<<<END RESPONSE ${n}>>>`);
    expect(prompt).toContain(`--- Response B ---\n<<<RESPONSE ${n}>>>\nanswer c\n<<<END RESPONSE ${n}>>>`);
    expect(withoutFences(prompt)).toContain(
      'Question: Why?\n\n--- Response A ---\nanswer a\n\n--- Response B ---\nanswer c\n\nInstructions:',
    );
    expect(prompt).not.toContain('p/a');
    // planned again (a retried job): the same prompt, boundary included
    expect(councilMode.plan('stage2', ctx(rows))[0].messages[0].content).toBe(prompt);

    const s2 = councilMode.reduce('stage2', ctx(rows), [
      ok('p/a', 'FINAL RANKING:\n1. Response B\n2. Response A'),
      ok('p/b', 'no idea'),
      failed('p/c'),
    ]);
    expect(s2.events[0].payload).toEqual({
      data: [
        {
          model: 'p/a',
          ranking: 'FINAL RANKING:\n1. Response B\n2. Response A',
          parsedRanking: ['Response B', 'Response A'],
        },
        { model: 'p/b', ranking: 'no idea', parsedRanking: [] },
      ],
      metadata: {
        labelToModel: { 'Response A': 'p/a', 'Response B': 'p/c' },
        aggregateRankings: [
          { model: 'p/c', averageRank: 1, rankingsCount: 1 },
          { model: 'p/a', averageRank: 2, rankingsCount: 1 },
        ],
      },
    });
    const allRows = [...rows, ...s2.rows];
    const plan3 = councilMode.plan('stage3', ctx(allRows));
    expect(plan3.map((c) => c.model)).toEqual(['p/chair']);
    expect(plan3[0].messages[0].content).toMatch(/^--- Evaluator: p\/a ---\n<<<EVALUATION [0-9a-f]{16}>>>$/m);

    const s3 = councilMode.reduce('stage3', ctx(allRows), [ok('p/chair', 'the synthesis')]);
    expect(s3.transition).toEqual({ kind: 'done', content: 'the synthesis' });
    const result = councilMode.load([...allRows, ...s3.rows], config, 'Title');
    expect(result.stage3).toEqual({ model: 'p/chair', response: 'the synthesis', responseTimeMs: 10 });
    expect(result.stage1?.map((r) => r.model)).toEqual(['p/a', 'p/c']);
    expect(result.title).toBe('Title');
  });

  it('the loader returns only the stages reached so far', () => {
    expect(councilMode.load([], config, null)).toEqual({});
  });

  it('stage 3 chairman failure ends with an error that says earlier stages are kept', () => {
    const reduction = councilMode.reduce('stage3', ctx(), [failed('p/chair', 'timed out')]);
    expect(reduction.transition).toEqual({
      kind: 'fail',
      message:
        'The chairman model p/chair failed to synthesize (timed out). The council answers and rankings are saved.',
    });
  });
});

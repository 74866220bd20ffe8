import type { LongRow } from '@conclave/analysis';
import type {
  BatchAccepted,
  BatchEstimate,
  BatchView,
  DeliberationEstimate,
  EstimateRange,
} from '@conclave/contracts';
import {
  startOpenRouterModelsServer,
  type OpenRouterModelsServer,
} from '../libs/llm/src/testing/openrouter-models-server';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * `?dryRun=true` (issue 21, "cost before"): the same validation as a real request, nothing stored
 * or enqueued, and a plan whose call count is what the real deliberation then makes — counted from
 * its model_calls rows, the title call (stage `title`) included, since a new conversation makes one.
 */
describe('dry runs against the real deliberations', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const stored = async () =>
    (
      await stack.db.query(
        `SELECT (SELECT COUNT(*)::int FROM conversations) AS c, (SELECT COUNT(*)::int FROM messages) AS m,
           (SELECT COUNT(*)::int FROM batches) AS b, (SELECT COUNT(*)::int FROM idempotency_keys) AS k`,
      )
    )[0] as { c: number; m: number; b: number; k: number };

  const queued = async () => {
    const counts = await stack.queueCounts();
    return Object.values(counts).reduce((a, b) => a + b, 0);
  };

  const dryRun = (body: unknown, query = 'dryRun=true') =>
    stack.api<DeliberationEstimate & { fields?: Record<string, string> }>(
      'POST',
      `/api/deliberations?${query}`,
      {
        body,
        headers: { 'idempotency-key': `dry-${Math.random()}` },
      },
    );

  /** The model_calls rows the deliberation made, per stage (the title's under `title`). */
  const callsMade = async (messageId: string): Promise<Record<string, number>> => {
    const rows: { stage: string; n: number }[] = await stack.db.query(
      'SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 GROUP BY stage',
      [messageId],
    );
    return Object.fromEntries(rows.map((r) => [r.stage, r.n]));
  };
  const total = (byStage: Record<string, number>) => Object.values(byStage).reduce((a, b) => a + b, 0);
  const exact = (n: number): EstimateRange => ({ min: n, max: n });

  it.each([
    [
      'council',
      {
        question: 'Monorepo or polyrepo?',
        councilModels: ['sim/a', 'sim/b', 'sim/c'],
        chairmanModel: 'sim/chair',
      },
    ],
    [
      'jury',
      {
        question: 'Review this',
        mode: 'jury',
        modeConfig: {
          content: 'Water boils at 100 degrees Celsius at sea level.',
          jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
          foremanModel: 'sim/foreman',
        },
      },
    ],
    [
      'vote',
      // Every voter picks Response A: no tie, so no tiebreak call.
      {
        question: 'Best sorting algorithm?',
        mode: 'vote',
        modeConfig: { models: ['sim/a:voteA', 'sim/b:voteA', 'sim/c:voteA'] },
      },
    ],
    [
      'debate',
      { question: 'Tabs or spaces?', mode: 'debate', modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] } },
    ],
  ])(
    '%s: the dry run stores nothing and plans exactly the calls the deliberation makes',
    async (mode, body) => {
      const before = await stored();
      const jobs = await queued();
      const { status, body: estimate } = await dryRun(body);
      expect(status).toBe(200);
      expect(await stored()).toEqual(before);
      expect(await queued()).toBe(jobs);
      expect(estimate).toMatchObject({ dryRun: true, mode, titleCall: { counted: true } });
      expect(estimate.assumptions.charsPerToken).toBe(4);
      // Simulated models, no real provider: free, and said so.
      expect(estimate.costUsd).toEqual({ min: 0, max: 0 });
      expect(estimate.models.every((m) => m.pricing?.source === 'simulated' && m.pricingNote)).toBe(true);
      expect(estimate.promptTokens.min).toBeGreaterThan(0);
      expect(estimate.completionTokens.max).toBeGreaterThan(estimate.completionTokens.min);

      const { messageId, events } = await stack.run(body);
      expect(events.at(-1)?.type).toBe('complete');
      const made = await callsMade(messageId);
      expect(made.title).toBe(1);
      if (mode === 'vote') {
        // The tiebreak is the one variable stage: the vote's panel agreed, so it made the fewest calls.
        expect(estimate.calls).toEqual({ min: 6 + 1, max: 7 + 1 });
        expect(estimate.stages.tiebreak).toEqual({ min: 0, max: 1 });
        expect(total(made)).toBe(estimate.calls.min);
      } else {
        expect(estimate.calls).toEqual(exact(total(made)));
        expect(estimate.variable).toEqual([]);
      }
      for (const [stage, n] of Object.entries(made)) expect(estimate.stages[stage].min).toBe(n);
      // Per model too.
      const rows: { model: string; n: number }[] = await stack.db.query(
        'SELECT model, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 GROUP BY model',
        [messageId],
      );
      for (const row of rows)
        expect(estimate.models.find((m) => m.model === row.model)?.calls.min).toBe(row.n);
    },
  );

  it('vote: a tie makes the tiebreak call, the top of the range', async () => {
    const body = {
      question: 'Which one?',
      mode: 'vote',
      modeConfig: { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:voteC'] },
    };
    const { body: estimate } = await dryRun(body);
    const { messageId } = await stack.run(body);
    const made = await callsMade(messageId);
    expect(made.tiebreak).toBe(1);
    expect(total(made)).toBe(estimate.calls.max);
  });

  it('delphi: the calls made fall inside the range over rounds', async () => {
    const body = {
      question: 'How many piano tuners work in Chicago?',
      mode: 'delphi',
      modeConfig: {
        panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'],
        facilitatorModel: 'sim/facilitator',
        maxRounds: 4,
      },
    };
    const { status, body: estimate } = await dryRun(body);
    expect(status).toBe(200);
    // classify + 4 per round + synthesis + title: 1 round at least, 4 at most.
    expect(estimate.calls).toEqual({ min: 1 + 4 + 1 + 1, max: 1 + 16 + 1 + 1 });
    expect(estimate.stages.round_1).toEqual(exact(4));
    expect(estimate.stages.round_4).toEqual({ min: 0, max: 4 });
    expect(estimate.variable.join(' ')).toMatch(/round_2: 0–4 calls/);
    const { messageId, events } = await stack.run(body);
    expect(events.at(-1)?.type).toBe('complete');
    const made = total(await callsMade(messageId));
    expect(made).toBeGreaterThanOrEqual(estimate.calls.min);
    expect(made).toBeLessThanOrEqual(estimate.calls.max);
  });

  /**
   * Issue 36 item 8: the token ranges hold. Each mode's real run (simulated models, title call
   * included) spends prompt and completion tokens inside the dry run's ranges, per model too.
   */
  it.each([
    [
      'council',
      {
        question: 'Monorepo or polyrepo?',
        councilModels: ['sim/a', 'sim/b', 'sim/c'],
        chairmanModel: 'sim/chair',
      },
    ],
    [
      'jury',
      {
        question: 'Review this',
        mode: 'jury',
        modeConfig: {
          content: 'Water boils at 100 degrees Celsius at sea level.',
          jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
          foremanModel: 'sim/foreman',
        },
      },
    ],
    [
      'vote (a tie: the tiebreak runs)',
      {
        question: 'Which one?',
        mode: 'vote',
        modeConfig: { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:voteC'] },
      },
    ],
    [
      'debate',
      { question: 'Tabs or spaces?', mode: 'debate', modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] } },
    ],
    [
      'delphi (a stubborn panelist: every round runs)',
      {
        question: 'How many piano tuners work in Chicago?',
        mode: 'delphi',
        modeConfig: {
          panelistModels: ['sim/p1', 'sim/p2:stubborn', 'sim/p3', 'sim/p4'],
          facilitatorModel: 'sim/facilitator',
          maxRounds: 4,
        },
      },
    ],
    [
      'delphi (qualitative)',
      {
        question: 'Rust or Go?',
        mode: 'delphi',
        modeConfig: {
          panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'],
          facilitatorModel: 'sim/facilitator',
          maxRounds: 3,
        },
      },
    ],
  ])("%s: the tokens the deliberation spends lie inside the dry run's ranges", async (name, body) => {
    const { body: estimate } = await dryRun(body);
    const { messageId, events } = await stack.run(body);
    expect(events.at(-1)?.type).toBe('complete');
    const rows: { model: string; stage: string; p: number; c: number }[] = await stack.db.query(
      `SELECT model, stage, COALESCE(prompt_tokens, 0)::int AS p, COALESCE(completion_tokens, 0)::int AS c
         FROM model_calls WHERE message_id = $1`,
      [messageId],
    );
    if (name.startsWith('vote')) expect(rows.some((r) => r.stage === 'tiebreak')).toBe(true);
    if (name.includes('stubborn')) expect(rows.some((r) => r.stage === 'round_4')).toBe(true);
    const inside = (value: number, range: EstimateRange) => ({
      value,
      within: value >= range.min && value <= range.max,
      range,
    });
    const sum = (of: typeof rows, pick: 'p' | 'c') => of.reduce((t, r) => t + r[pick], 0);
    expect(inside(sum(rows, 'p'), estimate.promptTokens).within).toBe(true);
    expect(inside(sum(rows, 'c'), estimate.completionTokens).within).toBe(true);
    for (const model of new Set(rows.map((r) => r.model))) {
      const figures = estimate.models.find((m) => m.model === model)!;
      const own = rows.filter((r) => r.model === model);
      expect({
        model,
        prompt: inside(sum(own, 'p'), figures.promptTokens),
        completion: inside(sum(own, 'c'), figures.completionTokens),
      }).toMatchObject({ model, prompt: { within: true }, completion: { within: true } });
    }
  });

  it('validates exactly as a real request: the same 400s, and dryRun itself is checked', async () => {
    const bad = { question: '', mode: 'jury', modeConfig: { jurorModels: ['sim/a'] }, extra: 1 };
    const real = await stack.api('POST', '/api/deliberations', { body: bad });
    const dry = await dryRun(bad);
    expect(real.status).toBe(400);
    expect(dry).toEqual(real);
    const wrong = await dryRun({ question: 'Q?' }, 'dryRun=yes');
    expect(wrong.status).toBe(400);
    expect(wrong.body.fields).toEqual({ dryRun: 'dryRun must be true or false (or 1, 0)' });
    // In the body it is not a field of the request.
    const inBody = await stack.api<{ fields: Record<string, string> }>(
      'POST',
      '/api/deliberations?dryRun=true',
      {
        body: { question: 'Q?', dryRun: true },
      },
    );
    expect(inBody.status).toBe(400);
    expect(inBody.body.fields).toHaveProperty('dryRun');
    // dryRun=false is a real request.
    const started = await stack.api('POST', '/api/deliberations?dryRun=false', {
      body: { question: 'Real one' },
    });
    expect(started.status).toBe(202);
  });

  it('a follow-up: the conversation is checked as a real one would be, and no title call is counted', async () => {
    const { conversationId } = await stack.run({
      question: 'First question',
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c',
    });
    const estimate = await dryRun({
      question: 'And then?',
      conversationId,
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c',
    });
    expect(estimate.status).toBe(200);
    expect(estimate.body.titleCall).toEqual({ counted: false, model: null });
    expect(estimate.body.calls).toEqual(exact(5));
    const missing = await dryRun({ question: 'Q', conversationId: '00000000-0000-4000-8000-000000000000' });
    expect(missing.status).toBe(404);
    const jury = await stack.run({ question: 'Q', mode: 'jury', modeConfig: { content: 'Some content' } });
    const single = await dryRun({
      question: 'Q',
      mode: 'jury',
      conversationId: jury.conversationId,
      modeConfig: { content: 'x' },
    });
    expect(single.status).toBe(400);
    expect(single.body.fields).toHaveProperty('conversationId');
  });

  it('a batch: totals and a per-item range, nothing stored; a bad item is the same 400 as for real', async () => {
    const before = await stored();
    const batch = {
      items: [
        { question: 'One?', mode: 'council', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
        { question: 'Two?', mode: 'vote', modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] } },
        { question: 'How many?', mode: 'delphi', modeConfig: { questionType: 'numeric', maxRounds: 3 } },
      ],
      generateTitles: true,
      maxCostUsd: 5,
    };
    const { status, body } = await stack.api<BatchEstimate>('POST', '/api/batches?dryRun=true', {
      body: batch,
    });
    expect(status).toBe(200);
    expect(await stored()).toEqual(before);
    const delphiPanel = stack.config.defaults.delphi.panelistModels.length; // the default Delphi roster
    expect(body).toMatchObject({
      dryRun: true,
      total: 3,
      byMode: { council: 1, vote: 1, delphi: 1 },
      titleCalls: true,
      maxCostUsd: 5,
      withinBudget: 'yes',
      costUsd: { min: 0, max: 0 },
    });
    const council = 2 + 2 + 1 + 1;
    const vote = { min: 3 + 3 + 1, max: 3 + 3 + 1 + 1 };
    const delphi = { min: delphiPanel + 1 + 1, max: 3 * delphiPanel + 1 + 1 };
    expect(body.calls).toEqual({
      min: council + vote.min + delphi.min,
      max: council + vote.max + delphi.max,
    });
    expect(body.perItem.calls).toEqual({ min: Math.min(council, vote.min, delphi.min), max: delphi.max });
    expect(body.stages['vote.tiebreak']).toEqual({ min: 0, max: 1 });
    expect(body.stages['delphi.round_3']).toEqual({ min: 0, max: delphiPanel });

    const invalid = { items: [{ question: 'ok' }, { question: 'x', mode: 'nope' }], maxCostUsd: 0 };
    const real = await stack.api('POST', '/api/batches', { body: invalid });
    const dry = await stack.api('POST', '/api/batches?dryRun=true', { body: invalid });
    expect(real.status).toBe(400);
    expect(dry).toEqual(real);
    expect(JSON.stringify(real.body)).toContain('maxCostUsd');

    const csv = 'question,content\nIs it good?,Some content\nAnd this?,Other content\n';
    const upload = await stack.api<BatchEstimate>('POST', '/api/batches?dryRun=1&mode=jury', {
      raw: csv,
      headers: { 'content-type': 'text/csv' },
    });
    expect(upload.status).toBe(200);
    expect(upload.body).toMatchObject({ total: 2, byMode: { jury: 2 }, titleCalls: false });
    expect(await stored()).toEqual(before);
  });
});

/**
 * Issue 36 item 8, for batches: a batch of each mode (simulated panels, questions and contents of
 * very different lengths) is dry-run and then run; the tokens its calls used (from the long export)
 * lie inside the dry run's ranges, every item's inside the per-item range, and the response says
 * what the batch estimate was measured on.
 */
describe('batch dry runs against the real batches', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '16' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const QUESTIONS = [
    'Q?',
    'How many piano tuners work in Chicago?',
    `${'A much longer question that restates its context at length. '.repeat(6)}What now?`,
    'Tabs or spaces?',
  ];
  const CONTENTS = ['Short.', 'A long review text with many sentences about the topic at hand. '.repeat(15)];
  const BATCHES: [string, Record<string, unknown>][] = [
    ['council', { mode: 'council', councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' }],
    ['vote', { mode: 'vote', modeConfig: { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:voteC'] } }],
    ['debate', { mode: 'debate', modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] } }],
    [
      'jury',
      { mode: 'jury', modeConfig: { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/f' } },
    ],
    [
      'delphi',
      {
        mode: 'delphi',
        modeConfig: {
          panelistModels: ['sim/p1', 'sim/p2:stubborn', 'sim/p3'],
          facilitatorModel: 'sim/f',
          maxRounds: 3,
        },
      },
    ],
  ];
  const within = (value: number, range: EstimateRange) => value >= range.min && value <= range.max;

  it.each(BATCHES)('%s: the batch’s tokens fall inside the dry run’s ranges', async (mode, defaults) => {
    const body = {
      name: `dry ${mode}`,
      defaults,
      items: QUESTIONS.map((question, i) => ({
        question,
        ...(mode === 'jury' ? { modeConfig: { content: CONTENTS[i % CONTENTS.length] } } : {}),
      })),
    };
    const dry = await stack.api<BatchEstimate>('POST', '/api/batches?dryRun=true', { body });
    expect(dry.status).toBe(200);
    expect(dry.body.assumptions.simulated?.measured.batches).toMatchObject({ outsideRange: 0 });
    expect(dry.body.assumptions.notes.join(' ')).toMatch(/simulated batches of every mode/);

    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', { body });
    expect(accepted.status).toBe(202);
    const batchId = accepted.body.batchId;
    for (const deadline = Date.now() + 180_000; ;) {
      const view = (await stack.api<BatchView>('GET', `/api/batches/${batchId}`)).body;
      if (view.status !== 'queued' && view.status !== 'running') {
        expect(view.status).toBe('complete');
        break;
      }
      if (Date.now() > deadline) throw new Error(`batch ${batchId} not finished`);
      await sleep(200);
    }
    const exported = await stack.api<string>('GET', `/api/batches/${batchId}/results?shape=long`);
    const calls = exported.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LongRow)
      .filter((r) => r.kind === 'call');
    const tokens = (rows: LongRow[]) => ({
      calls: rows.length,
      prompt: rows.reduce((s, r) => s + (r.promptTokens ?? 0), 0),
      completion: rows.reduce((s, r) => s + (r.completionTokens ?? 0), 0),
    });
    const total = tokens(calls);
    expect({
      ...total,
      calls: within(total.calls, dry.body.calls),
      prompt: within(total.prompt, dry.body.promptTokens),
      completion: within(total.completion, dry.body.completionTokens),
    }).toEqual({ ...total, calls: true, prompt: true, completion: true });
    for (const index of QUESTIONS.keys()) {
      const own = tokens(calls.filter((c) => c.index === index));
      expect({
        index,
        ...own,
        calls: within(own.calls, dry.body.perItem.calls),
        prompt: within(own.prompt, dry.body.perItem.promptTokens),
        completion: within(own.completion, dry.body.perItem.completionTokens),
      }).toEqual({ index, ...own, calls: true, prompt: true, completion: true });
    }
    // Per model too.
    for (const model of new Set(calls.map((c) => c.model!))) {
      const estimate = dry.body.models.find((m) => m.model === model)!;
      const t = tokens(calls.filter((c) => c.model === model));
      expect({
        model,
        prompt: within(t.prompt, estimate.promptTokens),
        completion: within(t.completion, estimate.completionTokens),
      }).toEqual({ model, prompt: true, completion: true });
    }
  });
});

describe('dry-run prices from the OpenRouter catalogue', () => {
  let openrouter: OpenRouterModelsServer;
  let stack: TestStack;
  beforeAll(async () => {
    openrouter = await startOpenRouterModelsServer();
    stack = new TestStack({
      OPENROUTER_API_KEY: 'sk-or-v1-dry-run-test',
      OPENROUTER_BASE_URL: openrouter.baseURL,
    });
    await stack.start({ worker: false });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await openrouter.close();
  });

  it('prices per million tokens when known, zero for sim/, and says plainly when unknown', async () => {
    const { status, body } = await stack.api<DeliberationEstimate>('POST', '/api/deliberations?dryRun=true', {
      body: {
        question: 'Which is faster?',
        councilModels: ['openai/gpt-4o', 'openrouter/auto', 'acme/unlisted'],
        chairmanModel: 'sim/chair',
      },
    });
    expect(status).toBe(200);
    const model = (id: string) => body.models.find((m) => m.model === id)!;
    expect(model('openai/gpt-4o').pricing).toEqual({
      promptPerMillionUsd: 2.5,
      completionPerMillionUsd: 10,
      source: 'openrouter',
    });
    const gpt = model('openai/gpt-4o');
    expect(gpt.costUsd!.min).toBeCloseTo(
      (gpt.promptTokens.min * 2.5 + gpt.completionTokens.min * 10) / 1e6,
      6,
    );
    expect(gpt.costUsd!.max).toBeCloseTo(
      (gpt.promptTokens.max * 2.5 + gpt.completionTokens.max * 10) / 1e6,
      6,
    );
    expect(model('openrouter/auto')).toMatchObject({ pricing: null, costUsd: null });
    expect(model('openrouter/auto').pricingNote).toMatch(/gives no price/);
    expect(model('acme/unlisted')).toMatchObject({ pricing: null, costUsd: null });
    expect(model('acme/unlisted').pricingNote).toMatch(/not in the openrouter model list/);
    expect(model('sim/chair')).toMatchObject({ pricing: { source: 'simulated', promptPerMillionUsd: 0 } });
    expect(body.costUsd).toBeNull();
    expect(body.unpricedModels.sort()).toEqual(['acme/unlisted', 'openrouter/auto']);
    expect(body.knownCostUsd).toEqual(gpt.costUsd);
  });
});

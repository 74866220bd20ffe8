import type {
  CouncilResult,
  DeliberationEstimate,
  DeliberationView,
  JuryResult,
  JurorSummary,
} from '@conclave/contracts';
import { outcomeOf } from '@conclave/outcomes';
import { COUNCIL_SEQUENCE, expectContiguous, modeEvents, TestStack } from './support/harness';

/**
 * Deadlines, quorum and fallbacks (issue 32), on the real stack: gateway, worker, PostgreSQL, Redis,
 * Socket.IO; the simulated provider's `delay20000` is the straggler, `fail` the failing seat.
 */
describe('deadlines, quorum and fallbacks end to end', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const STRAGGLER = 'sim/x:delay20000';
  const view = async <T>(messageId: string) =>
    (await stack.api<DeliberationView<T>>('GET', `/api/deliberations/${messageId}`)).body;
  const LINKS = { web: 'https://example.test/w', transcript: 'conclave://t' };

  it('a council with a quorum of 2 of 3 goes on without its straggler, stores it as cut, and completes', async () => {
    const started = Date.now();
    const { messageId, events } = await stack.run({
      question: 'Which queue should we use?',
      modeConfig: { councilModels: ['sim/a', 'sim/b', STRAGGLER], chairmanModel: 'sim/c', quorum: 2 },
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    expectContiguous(events);
    // The spec's events, unchanged: the cut shows only in model_progress.
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const cut = events.filter((e) => e.type === 'model_progress' && e.state === 'failed');
    expect(cut.map((e) => [e.stage, e.participant, e.error])).toEqual([
      ['stage1', STRAGGLER, 'cut: quorum of 2 reached'],
      ['stage2', STRAGGLER, 'cut: quorum of 2 reached'],
    ]);
    const result = await view<CouncilResult>(messageId);
    expect(result.status).toBe('complete');
    expect(result.result.stage1?.map((r) => r.model)).toEqual(['sim/a', 'sim/b']);
    const stragglerCalls = result.calls.filter((c) => c.model === STRAGGLER);
    expect(stragglerCalls.map((c) => [c.stage, c.ok, c.error])).toEqual([
      ['stage1', false, 'cut: quorum of 2 reached'],
      ['stage2', false, 'cut: quorum of 2 reached'],
    ]);
    // Each cut call is stored once and never retried.
    const [{ count }] = await stack.db.query<{ count: string }[]>(
      `SELECT count(*) FROM model_calls WHERE message_id = $1 AND model = $2`,
      [messageId, STRAGGLER],
    );
    expect(Number(count)).toBe(2);
    expect(outcomeOf(result, LINKS).failures).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ model: STRAGGLER, error: 'cut: quorum of 2 reached' }),
      ]),
    );
  });

  it('a council with a stage deadline goes on at the deadline once the minimum answered', async () => {
    const started = Date.now();
    const { messageId, events } = await stack.run({
      question: 'How should we shard?',
      modeConfig: {
        councilModels: ['sim/a', 'sim/b', STRAGGLER],
        chairmanModel: 'sim/c',
        stageDeadlineMs: 1500,
      },
    });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(3000); // two gated stages, each held to its deadline
    expect(took).toBeLessThan(15_000);
    expect(events.at(-1)?.type).toBe('complete');
    const result = await view<CouncilResult>(messageId);
    expect(result.calls.filter((c) => !c.ok).map((c) => [c.stage, c.model, c.error])).toEqual([
      ['stage1', STRAGGLER, 'cut: stage deadline of 1500 ms passed'],
      ['stage2', STRAGGLER, 'cut: stage deadline of 1500 ms passed'],
    ]);
    expect(result.result.stage3?.model).toBe('sim/c');
  });

  it('a failing chairman falls back to the next, which writes the final answer', async () => {
    const { messageId, events } = await stack.run({
      question: 'Rust or Go for the CLI?',
      modeConfig: {
        councilModels: ['sim/a', 'sim/b'],
        chairmanModel: 'sim/c:fail',
        chairmanFallbacks: ['sim/d:fail', 'sim/e'],
      },
    });
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const stage3 = events
      .filter((e) => e.type === 'model_progress' && e.stage === 'stage3')
      .map((e) => `${String(e.participant)} ${String(e.state)}`);
    expect(stage3).toEqual([
      'sim/c:fail started',
      'sim/c:fail failed',
      'sim/d:fail started',
      'sim/d:fail failed',
      'sim/e started',
      'sim/e succeeded',
    ]);
    const result = await view<CouncilResult>(messageId);
    expect(result.status).toBe('complete');
    expect(result.result.stage3?.model).toBe('sim/e');
    expect(result.calls.filter((c) => c.stage === 'stage3').map((c) => [c.model, c.ok])).toEqual([
      ['sim/c:fail', false],
      ['sim/d:fail', false],
      ['sim/e', true],
    ]);
    const [assistant] = await stack.db.query<{ content: string }[]>(
      'SELECT content FROM messages WHERE id = $1',
      [messageId],
    );
    expect(assistant.content).toBe(result.result.stage3?.response);
    expect(outcomeOf(result, LINKS).finalAuthor).toEqual({
      role: 'chairman',
      model: 'sim/e',
      failed: false,
      failedBefore: [
        { model: 'sim/c:fail', error: expect.stringContaining('simulated') },
        { model: 'sim/d:fail', error: expect.stringContaining('simulated') },
      ],
    });
  });

  it('a jury with a quorum and a failing foreman: the straggler is a failed juror, the fallback foreman reports', async () => {
    const { messageId, events } = await stack.run({
      question: 'Evaluate this note',
      mode: 'jury',
      modeConfig: {
        content: 'Use a queue for the uploads; retry with backoff.',
        jurorModels: ['sim/a', 'sim/b', 'sim/c', STRAGGLER],
        foremanModel: 'sim/f:fail',
        foremanFallbacks: ['sim/g'],
        quorum: 3,
      },
    });
    expect(events.at(-1)?.type).toBe('complete');
    expect(modeEvents(events).filter((e) => e.type === 'juror_complete')).toHaveLength(3);
    const summary = modeEvents(events).find((e) => e.type === 'all_jurors_complete') as unknown as {
      data: JurorSummary;
    };
    expect(summary.data.failedJurors).toEqual([{ model: STRAGGLER, reason: 'cut: quorum of 3 reached' }]);
    expect(summary.data.successfulJurors).toBe(3);
    const result = await view<JuryResult>(messageId);
    expect(result.result.foreman?.model).toBe('sim/g');
    expect(result.calls.filter((c) => c.stage === 'verdict').map((c) => [c.model, c.ok])).toEqual([
      ['sim/f:fail', false],
      ['sim/g', true],
    ]);
    expect(outcomeOf(result, LINKS).finalAuthor).toMatchObject({
      role: 'foreman',
      model: 'sim/g',
      failedBefore: [{ model: 'sim/f:fail' }],
    });
  });

  it("a vote's tiebreak passes from a chairman naming an untied label, and one failing, to the next", async () => {
    const { messageId, events } = await stack.run({
      question: 'Which cache?',
      mode: 'vote',
      modeConfig: {
        models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'],
        chairmanModel: 'sim/chair:voteC',
        chairmanFallbacks: ['sim/chair2:fail@tiebreak', 'sim/chair3:voteA'],
      },
    });
    const tiebreak = modeEvents(events).find((e) => e.type === 'tiebreak_complete') as unknown as {
      data: { model: string; chosenLabel: string; method: string };
    };
    expect(tiebreak.data).toMatchObject({
      model: 'sim/chair3:voteA',
      chosenLabel: 'Response A',
      method: 'chairman',
    });
    const result = await view<unknown>(messageId);
    expect(result.calls.filter((c) => c.stage === 'tiebreak').map((c) => [c.model, c.ok])).toEqual([
      ['sim/chair:voteC', true],
      ['sim/chair2:fail@tiebreak', false],
      ['sim/chair3:voteA', true],
    ]);
    const rows = await stack.stageRows(messageId);
    expect(rows.find((r) => r.stage_type === 'tiebreak')).toMatchObject({ model: 'sim/chair3:voteA' });
  });

  it('a debate with a fractional quorum leaves its straggler out after round 1', async () => {
    const { messageId, events } = await stack.run({
      question: 'Monolith or services?',
      mode: 'debate',
      modeConfig: { models: ['sim/a', 'sim/b', 'sim/c', STRAGGLER], quorum: 0.75 },
    });
    expect(modeEvents(events).map((e) => e.type)).toEqual([
      'debate_start',
      'round1_start',
      'round1_complete',
      'revision_start',
      'revision_complete',
      'vote_start',
      'vote_complete',
      'winner_declared',
      'title_complete',
      'complete',
    ]);
    const result = await view<unknown>(messageId);
    expect(result.calls.filter((c) => c.model === STRAGGLER).map((c) => [c.stage, c.error])).toEqual([
      ['round1', 'cut: quorum of 3 reached'],
    ]);
  });

  it('a Delphi round with a deadline carries on with the panelists that answered', async () => {
    const { messageId, events } = await stack.run({
      question: 'How many piano tuners are there in Chicago?',
      mode: 'delphi',
      modeConfig: {
        panelistModels: ['sim/a', 'sim/b', 'sim/c', STRAGGLER],
        facilitatorModel: 'sim/f',
        questionType: 'numeric',
        maxRounds: 2,
        stageDeadlineMs: 1000,
      },
    });
    expect(events.at(-1)?.type).toBe('complete');
    const result = await view<unknown>(messageId);
    const cut = result.calls.filter((c) => c.error?.startsWith('cut: '));
    expect(cut.length).toBeGreaterThanOrEqual(1);
    expect(cut[0]).toMatchObject({ stage: 'round_1', model: STRAGGLER });
  });

  it('refuses bad options with a 400 naming each field, in requests and presets', async () => {
    const refused = await stack.api<{ fields: Record<string, string> }>('POST', '/api/deliberations', {
      body: {
        question: 'Q?',
        modeConfig: {
          councilModels: ['sim/a', 'sim/b', 'sim/c'],
          chairmanModel: 'sim/c',
          quorum: 4,
          stageDeadlineMs: 10,
          chairmanFallbacks: ['sim/c'],
        },
      },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.fields).toEqual({
      'modeConfig.stageDeadlineMs': expect.stringContaining('1000'),
      'modeConfig.quorum': 'quorum 4 is more than the 3 council models',
      'modeConfig.chairmanFallbacks': expect.stringContaining('must not repeat chairmanModel'),
    });
    const jury = await stack.api<{ fields: Record<string, string> }>('POST', '/api/deliberations', {
      body: {
        question: 'Q?',
        mode: 'jury',
        modeConfig: {
          content: 'x',
          jurorModels: ['sim/a', 'sim/b', 'sim/c'],
          quorum: 1,
          foremanFallbacks: ['sim/a'],
        },
      },
    });
    expect(jury.status).toBe(400);
    expect(jury.body.fields).toEqual({
      'modeConfig.quorum': expect.stringMatching(/below the mode's minimum of 2/),
      'modeConfig.foremanFallbacks': expect.stringMatching(/juror model/),
    });
    const fraction = await stack.api<{ fields: Record<string, string> }>('POST', '/api/deliberations', {
      body: { question: 'Q?', modeConfig: { quorum: 0, chairmanFallbacks: 'sim/x' } },
    });
    expect(fraction.status).toBe(400);
    expect(Object.keys(fraction.body.fields).sort()).toEqual([
      'modeConfig.chairmanFallbacks',
      'modeConfig.quorum',
    ]);
    const preset = await stack.api<{ fields: Record<string, string> }>('POST', '/api/presets', {
      body: { name: 'too-few', mode: 'delphi', modeConfig: { quorum: 2 } },
    });
    expect(preset.status).toBe(400);
    expect(preset.body.fields['modeConfig.quorum']).toMatch(/minimum of 3/);
    const saved = await stack.api('POST', '/api/presets', {
      body: {
        name: 'quick-council',
        modeConfig: { councilModels: ['sim/a', 'sim/b', STRAGGLER], quorum: 2, chairmanFallbacks: ['sim/e'] },
      },
    });
    expect(saved.status).toBe(201);
    const { messageId } = await stack.deliberate({ question: 'From a preset?', preset: 'quick-council' });
    await stack.follow(messageId);
    const result = await view<CouncilResult>(messageId);
    expect(result.status).toBe('complete');
    expect(result.calls.find((c) => c.model === STRAGGLER)?.error).toBe('cut: quorum of 2 reached');
  });

  it('a dry run counts every fallback in its upper bound and bounds the duration by the deadline', async () => {
    const estimate = await stack.api<DeliberationEstimate>('POST', '/api/deliberations?dryRun=true', {
      body: {
        question: 'Q?',
        modeConfig: {
          councilModels: ['sim/a', 'sim/b', 'sim/c'],
          chairmanModel: 'sim/d',
          chairmanFallbacks: ['sim/e', 'sim/f'],
          stageDeadlineMs: 5000,
          timeoutMs: 60_000,
        },
      },
    });
    expect(estimate.status).toBe(200);
    expect(estimate.body.stages.stage3).toEqual({ min: 1, max: 3 });
    expect(estimate.body.duration).toEqual({
      maxMs: 60_000 * 5,
      withDeadlinesMs: 5000 * 2 + 60_000 * 3,
      perCallTimeoutMs: 60_000,
      capMs: null,
    });
  });
});

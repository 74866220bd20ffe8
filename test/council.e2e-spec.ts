import type { CouncilResult, DeliberationView } from '@conclave/contracts';
import { parseRanking } from '@conclave/deliberation';
import { COUNCIL_SEQUENCE, expectContiguous, modeEvents, TestStack } from './support/harness';

describe('council mode end to end (real gateway, worker, Postgres, Redis, Socket.IO)', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const view = async (messageId: string) =>
    (await stack.api<DeliberationView<CouncilResult>>('GET', `/api/deliberations/${messageId}`)).body;

  it('runs answer, rank, synthesize and delivers the spec event sequence with payloads', async () => {
    const { messageId, conversationId, events } = await stack.run({
      question: 'Is a monorepo right for a small team?',
    });
    expectContiguous(events);
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    for (const event of events) {
      expect(event.messageId).toBe(messageId);
      expect(new Date(event.at).toISOString()).toBe(event.at);
    }
    const byType = Object.fromEntries(modeEvents(events).map((e) => [e.type, e as Record<string, unknown>]));
    expect(byType.stage1_start).toMatchObject({ conversationId, messageId });
    const stage1 = byType.stage1_complete.data as CouncilResult['stage1'];
    expect(stage1.map((r) => r.model)).toEqual(['sim/athena', 'sim/hermes', 'sim/apollo']);
    const metadata = byType.stage2_complete.metadata as CouncilResult['stage2Metadata'];
    expect(metadata.labelToModel).toEqual({
      'Response A': 'sim/athena',
      'Response B': 'sim/hermes',
      'Response C': 'sim/apollo',
    });
    expect(metadata.aggregateRankings).toHaveLength(3);
    expect(byType.stage3_complete.data).toMatchObject({ model: 'sim/chairman' });
    const title = (byType.title_complete.data as { title: string }).title;
    expect(title.length).toBeGreaterThan(0);
    // The title call ran inside stage 1's job: one job per stage and no title job of its own.
    expect(await stack.jobsOf(messageId)).toEqual(
      ['stage1', 'stage2', 'stage3'].map((stage) => ({ id: `${messageId}__${stage}`, name: 'run-stage' })),
    );

    const progress = events.filter((e) => e.type === 'model_progress');
    expect(progress.filter((e) => e.state === 'started')).toHaveLength(3 + 3 + 1);
    expect(progress.filter((e) => e.state === 'succeeded')).toHaveLength(3 + 3 + 1);

    const result = await view(messageId);
    expect(result).toMatchObject({ status: 'complete', error: null, mode: 'council', simulated: true });
    expect(result.completedAt).not.toBeNull();
    expect(result.usage.promptTokens).toBeGreaterThan(0);
    expect(result.result).toEqual({
      stage1,
      stage2: byType.stage2_complete.data,
      stage2Metadata: metadata,
      stage3: byType.stage3_complete.data,
      title,
    });
  });

  it('stores the rows of deviations.md exactly once each', async () => {
    const { messageId } = await stack.run({
      question: 'Tabs or spaces?',
      councilModels: ['sim/one', 'sim/two'],
      chairmanModel: 'sim/one',
    });
    const rows = await stack.stageRows(messageId);
    expect(rows.map((r) => [r.stage_type, r.stage_order, r.model, r.role])).toEqual([
      ['stage1', 1, 'sim/one', 'respondent'],
      ['stage1', 1, 'sim/two', 'respondent'],
      ['stage2_label_map', 2, null, null],
      ['stage2', 3, 'sim/one', 'evaluator'],
      ['stage2', 3, 'sim/two', 'evaluator'],
      ['stage2_aggregate', 4, null, null],
      ['stage3', 5, 'sim/one', 'chairman'],
    ]);
    const labelMap = rows[2];
    expect(JSON.parse(labelMap.content)).toEqual({ 'Response A': 'sim/one', 'Response B': 'sim/two' });
    expect(labelMap.parsed_data).toEqual({ 'Response A': 'sim/one', 'Response B': 'sim/two' });
    expect(rows[3].parsed_data).toEqual({ parsedRanking: expect.any(Array), parseSuccess: true });
    expect(rows[5].parsed_data).toEqual({ aggregateRankings: expect.any(Array) });
    expect(rows[0].parsed_data).toEqual({});
    expect(rows[0].prompt_tokens).toBeGreaterThan(0);
    expect(rows[0].response_time_ms).toBeGreaterThanOrEqual(0);
    const [assistant] = await stack.db.query('SELECT content, status FROM messages WHERE id = $1', [
      messageId,
    ]);
    expect(assistant).toEqual({ content: rows[6].content, status: 'complete' });
  });

  it('accepts the roster inside modeConfig too', async () => {
    const { events, messageId } = await stack.run({
      question: 'Q?',
      mode: 'council',
      modeConfig: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', timeoutMs: 5000 },
    });
    expect(events.at(-1)?.type).toBe('complete');
    expect((await view(messageId)).result.stage3?.model).toBe('sim/c');
  });

  describe('edge cases of 01-council.md §F', () => {
    it('all council models fail: error event, message failed, no stage rows', async () => {
      const { messageId, events } = await stack.run({
        question: 'Anyone?',
        councilModels: ['sim/a:fail', 'sim/b:fail', 'sim/c:fail'],
      });
      expect(modeEvents(events).map((e) => e.type)).toEqual(['stage1_start', 'error']);
      expect(String(events.at(-1)?.message)).toMatch(/All council models failed/);
      expect(await stack.stageRows(messageId)).toEqual([]);
      const result = await view(messageId);
      expect(result.status).toBe('failed');
      expect(result.error).toMatch(/All council models failed.*sim\/a:fail/);
    });

    it('only one answer left: fails, since ranking needs at least 2', async () => {
      const { messageId, events } = await stack.run({
        question: 'Anyone?',
        councilModels: ['sim/a', 'sim/b:fail', 'sim/c:timeout'],
        modeConfig: { timeoutMs: 1000 },
      });
      expect(modeEvents(events).map((e) => e.type)).toEqual(['stage1_start', 'error']);
      expect(String(events.at(-1)?.message)).toMatch(/Only sim\/a answered.*at least 2/);
      expect(await stack.stageRows(messageId)).toEqual([]);
    });

    it('some models fail: continues with the answers it has', async () => {
      const { messageId, events } = await stack.run({
        question: 'Go on',
        councilModels: ['sim/a', 'sim/b:fail@answer', 'sim/c'],
      });
      expect(events.at(-1)?.type).toBe('complete');
      const failed = events.find((e) => e.type === 'model_progress' && e.state === 'failed');
      expect(failed).toMatchObject({ stage: 'stage1', participant: 'sim/b:fail@answer' });
      const result = (await view(messageId)).result;
      expect(result.stage1?.map((r) => r.model)).toEqual(['sim/a', 'sim/c']);
      expect(result.stage2Metadata?.labelToModel).toEqual({ 'Response A': 'sim/a', 'Response B': 'sim/c' });
      // b failed only its answer, so it still ranks the two responses
      expect(result.stage2?.map((r) => r.model)).toEqual(['sim/a', 'sim/b:fail@answer', 'sim/c']);
    });

    it.each([
      ['rank2', 2],
      ['rank3', 3],
      ['rank4', 4],
    ])('parses a ranking in the %s format with fallback level %i', async (flag, level) => {
      const { messageId } = await stack.run({
        question: 'Rank us',
        councilModels: [`sim/a:${flag}`, `sim/b:${flag}`],
        chairmanModel: 'sim/c',
      });
      const result = (await view(messageId)).result;
      for (const evaluation of result.stage2 ?? []) {
        expect(parseRanking(evaluation.ranking, ['Response A', 'Response B']).level).toBe(level);
        expect([...evaluation.parsedRanking].sort()).toEqual(['Response A', 'Response B']);
      }
      expect(result.stage2Metadata?.aggregateRankings).toHaveLength(2);
    });

    it('an unparseable ranking is excluded from aggregation', async () => {
      const { messageId } = await stack.run({
        question: 'Rank us',
        councilModels: ['sim/a:malformed@rank', 'sim/b', 'sim/c'],
      });
      const result = (await view(messageId)).result;
      const bad = result.stage2?.find((r) => r.model === 'sim/a:malformed@rank');
      expect(bad?.parsedRanking).toEqual([]);
      expect(result.stage2Metadata?.aggregateRankings.every((a) => a.rankingsCount === 2)).toBe(true);
      const rows = await stack.stageRows(messageId);
      expect(
        rows.find((r) => r.model === 'sim/a:malformed@rank' && r.stage_type === 'stage2')?.parsed_data,
      ).toEqual({
        parsedRanking: [],
        parseSuccess: false,
      });
    });

    it('all rankings parse as empty: empty aggregate, synthesis still runs', async () => {
      const { messageId, events } = await stack.run({
        question: 'Rank us',
        councilModels: ['sim/a:malformed@rank', 'sim/b:malformed@rank'],
        chairmanModel: 'sim/c',
      });
      expect(events.at(-1)?.type).toBe('complete');
      const result = (await view(messageId)).result;
      expect(result.stage2Metadata?.aggregateRankings).toEqual([]);
      expect(result.stage3?.response).toBeTruthy();
    });

    it('chairman fails: error event, stage 1 and stage 2 rows kept', async () => {
      const { messageId, events } = await stack.run({
        question: 'Synthesize',
        councilModels: ['sim/a', 'sim/b'],
        chairmanModel: 'sim/chair:fail@synthesis',
      });
      expect(modeEvents(events).map((e) => e.type)).toEqual([
        'stage1_start',
        'stage1_complete',
        'stage2_start',
        'stage2_complete',
        'stage3_start',
        'error',
      ]);
      expect(String(events.at(-1)?.message)).toMatch(/chairman model sim\/chair:fail@synthesis failed/);
      const rows = await stack.stageRows(messageId);
      expect(rows.map((r) => r.stage_type)).toEqual([
        'stage1',
        'stage1',
        'stage2_label_map',
        'stage2',
        'stage2',
        'stage2_aggregate',
      ]);
      const result = await view(messageId);
      expect(result.status).toBe('failed');
      expect(result.result.stage1).toHaveLength(2);
      expect(result.result.stage3).toBeUndefined();
    });

    it('a call past its timeout counts as a failed call', async () => {
      const started = Date.now();
      const { events } = await stack.run({
        question: 'Slow',
        councilModels: ['sim/a', 'sim/b', 'sim/slow:timeout'],
        modeConfig: { timeoutMs: 1000 },
      });
      expect(events.at(-1)?.type).toBe('complete');
      expect(events.find((e) => e.type === 'model_progress' && e.state === 'failed')).toMatchObject({
        participant: 'sim/slow:timeout',
        error: 'timed out',
      });
      expect(Date.now() - started).toBeLessThan(15_000);
    });

    it('a transient provider error is retried and reported as retrying', async () => {
      const { events } = await stack.run({
        question: 'Retry',
        councilModels: ['sim/a:transient@answer', 'sim/b'],
      });
      expect(events.at(-1)?.type).toBe('complete');
      const states = events
        .filter(
          (e) =>
            e.type === 'model_progress' && e.participant === 'sim/a:transient@answer' && e.stage === 'stage1',
        )
        .map((e) => e.state);
      expect(states).toEqual(['started', 'retrying', 'succeeded']);
    });
  });

  describe('multi-turn', () => {
    it('a follow-up sees earlier turns, has no title event, and keeps the conversation', async () => {
      const first = await stack.run({ question: 'First question', councilModels: ['sim/a', 'sim/b'] });
      const second = await stack.run({
        question: 'Second question',
        conversationId: first.conversationId,
        councilModels: ['sim/a', 'sim/b'],
      });
      expect(second.conversationId).toBe(first.conversationId);
      expect(modeEvents(second.events).map((e) => e.type)).not.toContain('title_complete');
      expect(second.events.at(-1)?.type).toBe('complete');
      const conversation = await stack.api<{
        messages: { role: string; turn: number; status: string }[];
        title: string;
      }>('GET', `/api/conversations/${first.conversationId}`);
      expect(conversation.body.messages.map((m) => [m.turn, m.role, m.status])).toEqual([
        [1, 'user', 'complete'],
        [1, 'assistant', 'complete'],
        [2, 'user', 'complete'],
        [2, 'assistant', 'complete'],
      ]);
      expect(conversation.body.title).toBeTruthy();
    });

    it('a follow-up to a missing conversation is 404 and stores nothing', async () => {
      const before = await stack.db.query('SELECT COUNT(*)::int AS n FROM messages');
      const response = await stack.api('POST', '/api/deliberations', {
        body: { question: 'Hello?', conversationId: '00000000-0000-4000-8000-000000000000' },
      });
      expect(response.status).toBe(404);
      expect(await stack.db.query('SELECT COUNT(*)::int AS n FROM messages')).toEqual(before);
    });
  });

  it('lists, shows and deletes conversations', async () => {
    const { conversationId, messageId } = await stack.run({
      question: 'Delete me',
      councilModels: ['sim/a', 'sim/b'],
    });
    // The first job, which carried the question, is kept for a while after it completed.
    expect((await stack.jobsOf(messageId)).map((j) => j.id)).toContain(`${messageId}__stage1`);
    const list = await stack.api<{ id: string; mode: string; lastStatus: string }[]>(
      'GET',
      '/api/conversations',
    );
    expect(list.body.find((c) => c.id === conversationId)).toMatchObject({
      mode: 'council',
      lastStatus: 'complete',
    });
    expect((await stack.api('DELETE', `/api/conversations/${conversationId}`)).status).toBe(204);
    // Deleting the conversation removes it: the question is in Redis no more.
    expect((await stack.jobsOf(messageId)).map((j) => j.id)).not.toContain(`${messageId}__stage1`);
    expect((await stack.api('GET', `/api/conversations/${conversationId}`)).status).toBe(404);
    expect((await stack.api('DELETE', `/api/conversations/${conversationId}`)).status).toBe(404);
  });

  it('describes the modes', async () => {
    const modes = await stack.api<
      { mode: string; available: boolean; roster: unknown[]; defaults: unknown }[]
    >('GET', '/api/modes');
    expect(modes.body.map((m) => m.mode)).toEqual(['council', 'vote', 'jury', 'debate', 'delphi']);
    expect(modes.body[0]).toMatchObject({
      available: true,
      roster: [
        { role: 'council', field: 'councilModels', min: 2, max: 6 },
        { role: 'chairman', field: 'chairmanModel', min: 1, max: 1 },
      ],
      defaults: { councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'], chairmanModel: 'sim/chairman' },
    });
  });
});

import type {
  DebateResult,
  DebateVoteResult,
  DebateWinnerResult,
  DeliberationView,
  DeliveredEvent,
  LabelMap,
  RevisionRoundResult,
} from '@conclave/contracts';
import { responseLabel, shuffleWithSeed } from '@conclave/deliberation';
import { expectContiguous, modeEvents, TestStack } from './support/harness';

const DEBATE_SEQUENCE = [
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
];

type Data<T> = DeliveredEvent & { data: T };

describe('debate mode end to end', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const debate = (models: string[], extra: Record<string, unknown> = {}) =>
    stack.run({
      question: 'Should companies adopt a 4-day work week?',
      mode: 'debate',
      modeConfig: { models, ...extra },
    });
  const one = <T>(events: DeliveredEvent[], type: string) =>
    modeEvents(events).find((e) => e.type === type) as Data<T> | undefined;
  const view = async (messageId: string) =>
    (await stack.api<DeliberationView<DebateResult>>('GET', `/api/deliberations/${messageId}`)).body;

  it('answers, revises, votes and declares a winner with the events and rows of 04-debate.md', async () => {
    const models = ['sim/a:revise:voteB', 'sim/b:stand:voteB', 'sim/c:merge:voteA', 'sim/d:revise:voteB'];
    const { messageId, conversationId, events } = await debate(models);
    expectContiguous(events);
    expect(modeEvents(events).map((e) => e.type)).toEqual(DEBATE_SEQUENCE);
    expect(one(events, 'debate_start')).toMatchObject({ conversationId, messageId, mode: 'debate' });

    const round1Map = one<{ labelMap: LabelMap }>(events, 'revision_start')?.data.labelMap;
    expect(round1Map).toEqual(Object.fromEntries(models.map((m, i) => [responseLabel(i), m])));
    const revisedMap = one<{ revisedLabelMap: LabelMap }>(events, 'vote_start')?.data.revisedLabelMap;
    const expectedOrder = shuffleWithSeed([0, 1, 2, 3], `${messageId}:revised-labels`);
    expect(revisedMap).toEqual(
      Object.fromEntries(expectedOrder.map((p, i) => [responseLabel(i), models[p]])),
    );

    const revision = one<RevisionRoundResult>(events, 'revision_complete')!.data;
    expect(revision.revisions.map((r) => [r.model, r.decision, r.parseSuccess])).toEqual([
      [models[0], 'REVISE', true],
      [models[1], 'STAND', true],
      [models[2], 'MERGE', true],
      [models[3], 'REVISE', true],
    ]);
    expect(revision.summary).toEqual({ totalModels: 4, revised: 2, stood: 1, merged: 1, parseFailed: 0 });
    const stand = revision.revisions[1];
    expect(stand.revisedResponse).toBe(stand.originalResponse);
    expect(stand.revisedWordCount).toBe(stand.originalWordCount);
    expect(revision.revisions[0].revisedWordCount).toBeGreaterThan(revision.revisions[0].originalWordCount);

    const vote = one<DebateVoteResult>(events, 'vote_complete')!.data;
    expect(vote).toMatchObject({
      tallies: { 'Response A': 1, 'Response B': 3 },
      validVoteCount: 4,
      invalidVoteCount: 0,
      isTie: false,
      tiedLabels: [],
    });
    expect(vote.revisedLabelToModel).toEqual(revisedMap);
    const winner = one<DebateWinnerResult>(events, 'winner_declared')!.data;
    const winnerModel = revisedMap!['Response B'];
    const winnerRevision = revision.revisions.find((r) => r.model === winnerModel)!;
    expect(winner).toEqual({
      winnerLabel: 'Response B',
      winnerModel,
      winnerResponse: winnerRevision.revisedResponse,
      winnerDecision: winnerRevision.decision,
      voteCount: 3,
      totalVotes: 4,
      tiebroken: false,
    });

    const rows = await stack.stageRows(messageId);
    expect(rows.map((r) => [r.stage_type, r.stage_order, r.role])).toEqual([
      ['round1_label_map', 0, null],
      ...models.map(() => ['initial_answer', 1, 'respondent']),
      ...models.map(() => ['revision', 2, 'debater']),
      ['revision_summary', 3, null],
      ['revised_label_map', 4, null],
      ...models.map(() => ['debate_vote', 5, 'voter']),
      ['debate_vote_tally', 6, null],
      ['debate_winner', 7, 'winner'],
    ]);
    const byType = (type: string) => rows.filter((r) => r.stage_type === type);
    expect(byType('initial_answer')[0].parsed_data).toEqual({
      responseTimeMs: byType('initial_answer')[0].response_time_ms,
    });
    expect(Object.keys(byType('revision')[0].parsed_data ?? {}).sort()).toEqual([
      'decision',
      'originalWordCount',
      'parseSuccess',
      'reasoning',
      'revisedWordCount',
    ]);
    expect(byType('revision')[0].content).toMatch(/^DECISION: REVISE\nREASONING: .+\n\nREVISED RESPONSE:\n/);
    expect(byType('debate_vote')[0].parsed_data).toEqual({
      votedFor: expect.stringMatching(/^Response [A-D]$/),
    });
    expect(byType('debate_vote_tally')[0].parsed_data).toEqual({
      tallies: { 'Response A': 1, 'Response B': 3 },
      validVoteCount: 4,
      invalidVoteCount: 0,
      isTie: false,
      winners: ['Response B'],
      tiedLabels: [],
    });
    expect(JSON.parse(byType('debate_vote_tally')[0].content)).toEqual({
      tallies: { 'Response A': 1, 'Response B': 3 },
      isTie: false,
      winners: ['Response B'],
    });
    expect(byType('debate_winner')[0]).toMatchObject({ model: winnerModel, content: winner.winnerResponse });

    const [assistant] = await stack.db.query(`SELECT content FROM messages WHERE id = $1`, [messageId]);
    expect(assistant.content).toBe(winner.winnerResponse);

    const result = await view(messageId);
    expect(result.result).toEqual({
      round1: one(events, 'round1_complete')!.data,
      round1LabelMap: round1Map,
      revisions: revision.revisions,
      revisionSummary: revision.summary,
      revisedLabelMap: revisedMap,
      votes: vote,
      winner,
      title: one<{ title: string }>(events, 'title_complete')!.data.title,
    });
  });

  it('treats duplicate models as separate participants with their own labels', async () => {
    const { messageId, events } = await debate(['sim/same', 'sim/same', 'sim/other']);
    expect(events.at(-1)?.type).toBe('complete');
    expect(one<{ labelMap: LabelMap }>(events, 'revision_start')?.data.labelMap).toEqual({
      'Response A': 'sim/same',
      'Response B': 'sim/same',
      'Response C': 'sim/other',
    });
    const rows = await stack.stageRows(messageId);
    expect(rows.filter((r) => r.stage_type === 'initial_answer')).toHaveLength(3);
    expect(rows.filter((r) => r.stage_type === 'revision')).toHaveLength(3);
    expect(rows.filter((r) => r.stage_type === 'debate_vote')).toHaveLength(3);
  });

  it('uses DEFAULT_DEBATE_CONFIG when no models are given', async () => {
    const { messageId, events } = await stack.run({ question: 'Defaults?', mode: 'debate' });
    expect(events.at(-1)?.type).toBe('complete');
    expect((await view(messageId)).result.round1?.map((r) => r.model)).toEqual([
      'anthropic/claude-opus-4-6',
      'openai/o3',
      'google/gemini-2.5-pro',
    ]);
  });

  describe('edge cases of 04-debate.md §F', () => {
    it('all models fail in stage 1: error, no stage rows', async () => {
      const { messageId, events } = await debate(['sim/a:fail', 'sim/b:fail', 'sim/c:fail']);
      expect(modeEvents(events).map((e) => e.type)).toEqual(['debate_start', 'round1_start', 'error']);
      expect(events.at(-1)?.message).toMatch(/All debate models failed/);
      expect(await stack.stageRows(messageId)).toEqual([]);
    });

    it('only one model left after stage 1: error', async () => {
      const { events } = await debate(['sim/a', 'sim/b:fail', 'sim/c:fail']);
      expect(events.at(-1)).toMatchObject({
        type: 'error',
        message: expect.stringMatching(/Only sim\/a answered/),
      });
    });

    it('two models left still debate and vote, each seeing only the other', async () => {
      const { events } = await debate(['sim/a', 'sim/b:fail@answer', 'sim/c']);
      expect(events.at(-1)?.type).toBe('complete');
      expect(one<{ labelMap: LabelMap }>(events, 'revision_start')?.data.labelMap).toEqual({
        'Response A': 'sim/a',
        'Response B': 'sim/c',
      });
      expect(one<DebateVoteResult>(events, 'vote_complete')?.data.votes).toHaveLength(2);
    });

    it('a model failing its revision stands on its original, still votes', async () => {
      const { events } = await debate(['sim/a:fail@revision', 'sim/b', 'sim/c']);
      const revision = one<RevisionRoundResult>(events, 'revision_complete')!.data;
      const failed = revision.revisions.find((r) => r.model === 'sim/a:fail@revision')!;
      expect(failed).toMatchObject({ decision: null, reasoning: null, parseSuccess: false });
      expect(failed.revisedResponse).toBe(failed.originalResponse);
      expect(revision.summary.parseFailed).toBe(1);
      expect(one<DebateVoteResult>(events, 'vote_complete')?.data.votes.map((v) => v.model)).toContain(
        'sim/a:fail@revision',
      );
    });

    it('all revisions fail: the vote is on the original answers', async () => {
      const { events } = await debate(['sim/a:fail@revision', 'sim/b:fail@revision', 'sim/c:fail@revision']);
      expect(events.at(-1)?.type).toBe('complete');
      const revision = one<RevisionRoundResult>(events, 'revision_complete')!.data;
      expect(revision.summary).toEqual({ totalModels: 3, revised: 0, stood: 0, merged: 0, parseFailed: 3 });
      const winner = one<DebateWinnerResult>(events, 'winner_declared')!.data;
      const original = one<{ model: string; response: string }[]>(events, 'round1_complete')!.data.find(
        (r) => r.model === winner.winnerModel,
      );
      expect(winner.winnerResponse).toBe(original?.response);
      expect(winner.winnerDecision).toBeNull();
    });

    it('no DECISION found: decision null, the whole text is the revision', async () => {
      const { messageId, events } = await debate([
        'sim/a:nodecision:nomarker:revise',
        'sim/b:nodecision:revise',
        'sim/c',
      ]);
      const [bare, withMarker] = one<RevisionRoundResult>(events, 'revision_complete')!.data.revisions;
      expect(bare).toMatchObject({ decision: null, parseSuccess: false });
      const [row] = (await stack.stageRows(messageId)).filter((r) => r.stage_type === 'revision');
      expect(bare.revisedResponse).toBe(row.content.trim());
      expect(bare.revisedResponse).toMatch(/^REASONING: /);
      // with the marker still there, what follows it is the revision
      expect(withMarker).toMatchObject({ decision: null, parseSuccess: false });
      expect(withMarker.revisedResponse.startsWith(withMarker.originalResponse)).toBe(true);
    });

    it('no REVISED RESPONSE marker: the text after the DECISION/REASONING block', async () => {
      const { events } = await debate(['sim/a:nomarker:revise', 'sim/b:markdown:merge', 'sim/c']);
      const [noMarker, markdown] = one<RevisionRoundResult>(events, 'revision_complete')!.data.revisions;
      expect(noMarker).toMatchObject({ decision: 'REVISE', parseSuccess: true });
      expect(noMarker.revisedResponse.startsWith(noMarker.originalResponse)).toBe(true);
      expect(noMarker.revisedResponse).not.toMatch(/DECISION|REASONING/);
      expect(markdown).toMatchObject({ decision: 'MERGE', parseSuccess: true });
    });

    it('all models STAND: the vote is on the unchanged answers', async () => {
      const { events } = await debate(['sim/a:stand', 'sim/b:stand', 'sim/c:stand']);
      const revision = one<RevisionRoundResult>(events, 'revision_complete')!.data;
      expect(revision.summary).toMatchObject({ stood: 3, revised: 0, merged: 0 });
      for (const r of revision.revisions) expect(r.revisedResponse).toBe(r.originalResponse);
      expect(events.at(-1)?.type).toBe('complete');
    });

    it('everyone votes for themselves: an N-way tie goes to the first label alphabetically', async () => {
      const { messageId, events } = await debate([
        'sim/a:self:stand',
        'sim/b:self:stand',
        'sim/c:self:stand',
      ]);
      const vote = one<DebateVoteResult>(events, 'vote_complete')!.data;
      for (const v of vote.votes) expect(vote.revisedLabelToModel[v.votedFor ?? '']).toBe(v.model);
      expect(vote).toMatchObject({
        tallies: { 'Response A': 1, 'Response B': 1, 'Response C': 1 },
        isTie: true,
        tiedLabels: ['Response A', 'Response B', 'Response C'],
      });
      const winner = one<DebateWinnerResult>(events, 'winner_declared')!.data;
      expect(winner).toMatchObject({
        winnerLabel: 'Response A',
        tiebroken: true,
        tiebreakerMethod: 'alphabetical',
      });
      expect((await view(messageId)).result.winner?.tiebreakerMethod).toBe('alphabetical');
    });

    it('a two-way tie also goes to the first label alphabetically', async () => {
      const { events } = await debate(['sim/a:voteC', 'sim/b:voteB', 'sim/c:novote']);
      const vote = one<DebateVoteResult>(events, 'vote_complete')!.data;
      expect(vote).toMatchObject({
        isTie: true,
        tiedLabels: ['Response B', 'Response C'],
        invalidVoteCount: 1,
      });
      expect(one<DebateWinnerResult>(events, 'winner_declared')?.data.winnerLabel).toBe('Response B');
    });

    it('a vote that does not parse, or names no existing label, is excluded', async () => {
      const { events } = await debate(['sim/a:voteA', 'sim/b:novote', 'sim/c:badlabel']);
      const vote = one<DebateVoteResult>(events, 'vote_complete')!.data;
      expect(vote).toMatchObject({ validVoteCount: 1, invalidVoteCount: 2, tallies: { 'Response A': 1 } });
      expect(vote.votes.find((v) => v.model === 'sim/c:badlabel')?.votedFor).toBeNull();
    });

    it('all votes fail to parse: error, earlier stages kept', async () => {
      const { messageId, events } = await debate(['sim/a:novote', 'sim/b:novote', 'sim/c:badlabel']);
      expect(
        modeEvents(events)
          .map((e) => e.type)
          .slice(-3),
      ).toEqual(['revision_complete', 'vote_start', 'error']);
      expect(events.at(-1)?.message).toBe('All votes failed to parse.');
      const types = new Set((await stack.stageRows(messageId)).map((r) => r.stage_type));
      expect([...types]).toEqual([
        'round1_label_map',
        'initial_answer',
        'revision',
        'revision_summary',
        'revised_label_map',
        'debate_vote',
      ]);
    });

    it('timeouts in each stage (the minimum is 10 s): excluded, original stands, vote excluded', async () => {
      const [stage1, stage2, stage3] = await Promise.all([
        debate(['sim/a', 'sim/b', 'sim/c:timeout@answer'], { timeoutMs: 10_000 }),
        debate(['sim/a', 'sim/b', 'sim/c:timeout@revision'], { timeoutMs: 10_000 }),
        debate(['sim/a:voteA', 'sim/b:voteA', 'sim/c:timeout@vote'], { timeoutMs: 10_000 }),
      ]);
      for (const run of [stage1, stage2, stage3]) expect(run.events.at(-1)?.type).toBe('complete');
      expect(one<unknown[]>(stage1.events, 'round1_complete')?.data).toHaveLength(2);
      const revised = one<RevisionRoundResult>(stage2.events, 'revision_complete')!.data.revisions[2];
      expect(revised).toMatchObject({ decision: null, parseSuccess: false });
      expect(revised.revisedResponse).toBe(revised.originalResponse);
      expect(one<DebateVoteResult>(stage3.events, 'vote_complete')?.data).toMatchObject({
        validVoteCount: 2,
        invalidVoteCount: 1,
      });
    }, 40_000);
  });

  describe('request validation (04-debate.md §D)', () => {
    const post = (body: Record<string, unknown>) =>
      stack.api<{ fields?: Record<string, string> }>('POST', '/api/deliberations', { body });

    it.each([
      [
        'two models',
        { models: ['sim/a', 'sim/b'] },
        'modeConfig.models',
        'Debate mode requires at least 3 models',
      ],
      [
        'seven models',
        { models: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((m) => `sim/${m}`) },
        'modeConfig.models',
        'Maximum 6 models allowed',
      ],
      [
        'a timeout below 10 s',
        { timeoutMs: 5000 },
        'modeConfig.timeoutMs',
        'timeoutMs must not be less than 10000',
      ],
      [
        'a timeout above 600 s',
        { timeoutMs: 600_001 },
        'modeConfig.timeoutMs',
        'timeoutMs must not be greater than 600000',
      ],
      [
        'a chairman',
        { chairmanModel: 'sim/x' },
        'modeConfig.chairmanModel',
        'property chairmanModel should not exist',
      ],
    ])('%s is a 400 naming %s', async (_name, modeConfig, field, message) => {
      const response = await post({ question: 'q', mode: 'debate', modeConfig });
      expect(response.status).toBe(400);
      expect(response.body.fields?.[field]).toBe(message);
    });

    it('is single-turn, and a conversation of another mode is refused', async () => {
      const first = await debate(['sim/a', 'sim/b', 'sim/c']);
      const followUp = await post({
        question: 'again',
        mode: 'debate',
        conversationId: first.conversationId,
      });
      expect(followUp.status).toBe(400);
      expect(Object.keys(followUp.body.fields ?? {})).toEqual(['conversationId']);
      const council = await stack.run({ question: 'council first', councilModels: ['sim/a', 'sim/b'] });
      const mismatch = await post({
        question: 'now debate',
        mode: 'debate',
        conversationId: council.conversationId,
      });
      expect(mismatch.status).toBe(400);
      expect(Object.keys(mismatch.body.fields ?? {})).toEqual(['mode']);
    });
  });
});

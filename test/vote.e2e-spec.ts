import type {
  DeliberationView,
  DeliveredEvent,
  LabelMap,
  Stage1Response,
  TiebreakResult,
  VoteResult,
  VoteTallyResult,
  VoteWinnerResult,
} from '@conclave/contracts';
import { responseLabel, shuffleWithSeed } from '@conclave/deliberation';
import { expectContiguous, modeEvents, TestStack } from './support/harness';

type Data<T> = DeliveredEvent & { data: T };

describe('vote mode end to end', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const vote = (models: string[], extra: Record<string, unknown> = {}) =>
    stack.run({
      question: 'Which database should a small SaaS start with?',
      mode: 'vote',
      modeConfig: { models, ...extra },
    });
  const one = <T>(events: DeliveredEvent[], type: string) =>
    modeEvents(events).find((e) => e.type === type) as Data<T> | undefined;
  const view = async (messageId: string) =>
    (await stack.api<DeliberationView<VoteResult>>('GET', `/api/deliberations/${messageId}`)).body;

  it('a clear winner: events, rows and the winning answer as the assistant message', async () => {
    const models = ['sim/a:voteA', 'sim/b:voteA', 'sim/c:voteB'];
    const { messageId, conversationId, events } = await vote(models);
    expectContiguous(events);
    expect(modeEvents(events).map((e) => e.type)).toEqual([
      'vote_session_start',
      'stage1_start',
      'stage1_complete',
      'vote_start',
      'vote_complete',
      'winner_declared',
      'title_complete',
      'complete',
    ]);
    expect(one(events, 'vote_session_start')).toMatchObject({ conversationId, messageId, mode: 'vote' });
    const labelMap = one<{ labelMap: LabelMap }>(events, 'vote_start')!.data.labelMap;
    const order = shuffleWithSeed([0, 1, 2], `${messageId}:vote-labels`);
    expect(labelMap).toEqual(Object.fromEntries(order.map((p, i) => [responseLabel(i), models[p]])));
    const tally = one<VoteTallyResult>(events, 'vote_complete')!.data;
    expect(tally).toMatchObject({
      tallies: { 'Response A': 2, 'Response B': 1 },
      validVoteCount: 3,
      invalidVoteCount: 0,
      isTie: false,
      tiedLabels: [],
    });
    const winner = one<VoteWinnerResult>(events, 'winner_declared')!.data;
    const answers = one<Stage1Response[]>(events, 'stage1_complete')!.data;
    const winnerModel = labelMap['Response A'];
    expect(winner).toEqual({
      winnerLabel: 'Response A',
      winnerModel,
      winnerResponse: answers.find((a) => a.model === winnerModel)!.response,
      voteCount: 2,
      totalVotes: 3,
      tiebroken: false,
    });
    const rows = await stack.stageRows(messageId);
    expect(rows.map((r) => [r.stage_type, r.stage_order, r.role])).toEqual([
      ['initial_answer', 1, 'respondent'],
      ['initial_answer', 1, 'respondent'],
      ['initial_answer', 1, 'respondent'],
      ['vote_label_map', 2, null],
      ['vote', 3, 'voter'],
      ['vote', 3, 'voter'],
      ['vote', 3, 'voter'],
      ['vote_tally', 4, null],
      ['vote_winner', 6, 'winner'],
    ]);
    expect(rows[0].parsed_data).toEqual({});
    expect(rows[3].parsed_data).toEqual(labelMap);
    expect(rows[7].parsed_data).toEqual({
      tallies: { 'Response A': 2, 'Response B': 1 },
      validVoteCount: 3,
      invalidVoteCount: 0,
      isTie: false,
      tiedLabels: [],
    });
    expect(rows[8].parsed_data).toEqual({
      winnerLabel: 'Response A',
      winnerModel,
      voteCount: 2,
      totalVotes: 3,
      tiebroken: false,
      tiebreakerMethod: null,
    });
    const [assistant] = await stack.db.query('SELECT content FROM messages WHERE id = $1', [messageId]);
    expect(assistant.content).toBe(winner.winnerResponse);
    expect((await view(messageId)).result).toEqual({
      stage1: answers,
      labelMap,
      votes: tally,
      winner,
      title: one<{ title: string }>(events, 'title_complete')!.data.title,
    });
  });

  it('a two-way tie resolved by the chairman', async () => {
    const { messageId, events } = await vote(['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], {
      chairmanModel: 'sim/chair',
    });
    expect(
      modeEvents(events)
        .map((e) => e.type)
        .slice(4, 8),
    ).toEqual(['vote_complete', 'tiebreak_start', 'tiebreak_complete', 'winner_declared']);
    expect(one<VoteTallyResult>(events, 'vote_complete')!.data).toMatchObject({
      isTie: true,
      tiedLabels: ['Response A', 'Response B'],
      invalidVoteCount: 1,
    });
    const tiebreak = one<TiebreakResult>(events, 'tiebreak_complete')!.data;
    expect(tiebreak).toMatchObject({ model: 'sim/chair', chosenLabel: 'Response B', method: 'chairman' });
    expect(tiebreak.voteText).toMatch(/VOTE: Response B$/);
    expect(one<VoteWinnerResult>(events, 'winner_declared')!.data).toMatchObject({
      winnerLabel: 'Response B',
      tiebroken: true,
      tiebreakerMethod: 'chairman',
      voteCount: 1,
      totalVotes: 2,
    });
    const rows = await stack.stageRows(messageId);
    expect(rows.find((r) => r.stage_type === 'tiebreak')).toMatchObject({
      stage_order: 5,
      model: 'sim/chair',
      role: 'chairman',
      parsed_data: { chosenLabel: 'Response B', method: 'chairman' },
    });
    expect((await view(messageId)).result.tiebreak).toEqual(tiebreak);
  });

  it('a tie where the chairman fails goes to the first tied label alphabetically', async () => {
    const { events } = await vote(['sim/a:voteB', 'sim/b:voteC', 'sim/c:novote'], {
      chairmanModel: 'sim/chair:fail@tiebreak',
    });
    expect(one<TiebreakResult>(events, 'tiebreak_complete')!.data).toMatchObject({
      chosenLabel: 'Response B',
      method: 'alphabetical',
      voteText: '',
    });
    expect(one<VoteWinnerResult>(events, 'winner_declared')!.data).toMatchObject({
      winnerLabel: 'Response B',
      tiebreakerMethod: 'alphabetical',
    });
  });

  it('a chairman naming a label that was not tied: alphabetical', async () => {
    const { events } = await vote(['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], {
      chairmanModel: 'sim/chair:voteC',
    });
    const tiebreak = one<TiebreakResult>(events, 'tiebreak_complete')!.data;
    expect(tiebreak).toMatchObject({ chosenLabel: 'Response A', method: 'alphabetical' });
    expect(tiebreak.voteText).toMatch(/VOTE: Response C/);
  });

  it('the chairman may be one of the voters', async () => {
    const { events } = await vote(['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], {
      chairmanModel: 'sim/b:voteB',
    });
    expect(one<TiebreakResult>(events, 'tiebreak_complete')!.data).toMatchObject({
      model: 'sim/b:voteB',
      chosenLabel: 'Response B',
      method: 'chairman',
    });
  });

  it('some voters fail: excluded and counted as invalid votes', async () => {
    const { events } = await vote(['sim/a:voteA', 'sim/b:voteA', 'sim/c:fail@vote', 'sim/d:voteB']);
    const tally = one<VoteTallyResult>(events, 'vote_complete')!.data;
    expect(tally).toMatchObject({ validVoteCount: 3, invalidVoteCount: 1 });
    expect(tally.votes.map((v) => v.model)).not.toContain('sim/c:fail@vote');
    expect(events.at(-1)?.type).toBe('complete');
  });

  it('all votes unparsable: error, answers kept', async () => {
    const { messageId, events } = await vote(['sim/a:novote', 'sim/b:novote', 'sim/c:badlabel']);
    expect(events.at(-1)).toMatchObject({ type: 'error', message: 'All votes failed to parse.' });
    const types = (await stack.stageRows(messageId)).map((r) => r.stage_type);
    expect(types.filter((t) => t === 'initial_answer')).toHaveLength(3);
    expect(types).not.toContain('vote_winner');
  });

  it('fewer than 2 answers: error', async () => {
    const { messageId, events } = await vote(['sim/a', 'sim/b:fail', 'sim/c:fail']);
    expect(modeEvents(events).map((e) => e.type)).toEqual(['vote_session_start', 'stage1_start', 'error']);
    expect(events.at(-1)?.message).toMatch(/Only sim\/a answered; a vote needs at least 2/);
    expect(await stack.stageRows(messageId)).toEqual([]);
  });

  it('validates the request (02-vote.md §D) and is single-turn', async () => {
    const post = (body: Record<string, unknown>) =>
      stack.api<{ fields?: Record<string, string> }>('POST', '/api/deliberations', { body });
    const two = await post({ question: 'q', mode: 'vote', modeConfig: { models: ['sim/a', 'sim/b'] } });
    expect(two.body.fields).toEqual({ 'modeConfig.models': 'Vote mode requires at least 3 models' });
    const fast = await post({ question: 'q', mode: 'vote', modeConfig: { timeoutMs: 5000 } });
    expect(Object.keys(fast.body.fields ?? {})).toEqual(['modeConfig.timeoutMs']);
    const first = await vote(['sim/a', 'sim/b', 'sim/c']);
    const again = await post({ question: 'again', mode: 'vote', conversationId: first.conversationId });
    expect(again.status).toBe(400);
    expect(Object.keys(again.body.fields ?? {})).toEqual(['conversationId']);
  });
});

import type { CallOutcome, StageRow, SuccessfulCall } from '../engine/types';
import { ballotRow, castBallots, votesFromRows } from './voting';
import { simulatedReply } from '../../../../test/support/replies';

const ok = (key: string, model: string, content: string): SuccessfulCall =>
  simulatedReply(key, content, { model, responseTimeMs: 7, promptTokens: 1, completionTokens: 2 });
const failed = (key: string, model: string): CallOutcome => ({
  ok: false,
  key,
  model,
  error: 'x',
  responseTimeMs: 1,
});

const voters = [
  { participant: 0, model: 'p/a' },
  { participant: 1, model: 'p/a' },
  { participant: 2, model: 'p/b' },
  { participant: 3, model: 'p/c' },
];
const labels = ['Response A', 'Response B', 'Response C'];

describe('castBallots (vote and debate)', () => {
  it('reads each answered ballot; a failed voter casts none and counts as an invalid vote', () => {
    const { ballots, tally } = castBallots(
      voters,
      [
        ok('p0', 'p/a', 'VOTE: Response B'),
        ok('p1', 'p/a', 'I pick Response B.\nVOTE: Response B'),
        failed('p2', 'p/b'),
        ok('p3', 'p/c', 'VOTE: Response Z'),
      ],
      labels,
    );
    expect(ballots.map((b) => [b.participant, b.vote])).toEqual([
      [0, { model: 'p/a', voteText: 'VOTE: Response B', votedFor: 'Response B', responseTimeMs: 7 }],
      [
        1,
        {
          model: 'p/a',
          voteText: 'I pick Response B.\nVOTE: Response B',
          votedFor: 'Response B',
          responseTimeMs: 7,
        },
      ],
      // a label that was not shown is no vote
      [3, { model: 'p/c', voteText: 'VOTE: Response Z', votedFor: null, responseTimeMs: 7 }],
    ]);
    expect(tally).toMatchObject({
      tallies: { 'Response B': 2 },
      validVoteCount: 2,
      invalidVoteCount: 2,
      isTie: false,
      winners: ['Response B'],
    });
  });

  it('stores a ballot as a voter row with its seat, and reads the rows back in roster order', () => {
    const { ballots } = castBallots(
      voters.slice(0, 2),
      [ok('p1', 'p/a', 'VOTE: Response A'), ok('p0', 'p/a', 'VOTE: Response C')],
      labels,
    );
    const rows: StageRow[] = ballots.map((b) => ballotRow(b, 'debate_vote', 5)).reverse();
    expect(rows[1]).toEqual({
      stageType: 'debate_vote',
      stageOrder: 5,
      model: 'p/a',
      role: 'voter',
      content: 'VOTE: Response C',
      parsedData: { votedFor: 'Response C' },
      responseTimeMs: 7,
      promptTokens: 1,
      completionTokens: 2,
      costUsd: null,
      participant: 0,
    });
    expect(votesFromRows(rows, 'debate_vote').map((v) => v.votedFor)).toEqual(['Response C', 'Response A']);
    expect(votesFromRows(rows, 'vote')).toEqual([]);
  });
});

import type { DeliveredEvent, ModeName } from '@conclave/contracts';
import { ProgressLines } from './progress-lines';

let seq = 0;
const event = (type: string, payload: Record<string, unknown> = {}): DeliveredEvent =>
  ({ type, messageId: 'm', seq: ++seq, at: '2026-01-01T00:00:00.000Z', ...payload }) as DeliveredEvent;
const progress = (
  stage: string,
  participant: string | number,
  state: string,
  extra: Record<string, unknown> = {},
) => event('model_progress', { stage, participant, state, ...extra });

const linesOf = (mode: ModeName, events: DeliveredEvent[]) => {
  const lines = new ProgressLines(mode);
  return events.flatMap((e) => lines.linesFor(e));
};

describe('ProgressLines', () => {
  it('a stage resumed after a fault is one line', () => {
    expect(
      linesOf('council', [event('resumed', { stage: 'stage1', reason: 'stalled', message: 'x' })]),
    ).toEqual(['Resuming stage1 (it had stopped moving).\n']);
  });

  it('council: who answered and ranked, the aggregate ranking; the synthesis itself is not a line', () => {
    const lines = linesOf('council', [
      event('stage1_start', { conversationId: 'c' }),
      progress('stage1', 'sim/a', 'started'),
      progress('stage1', 'sim/a', 'succeeded', { responseTimeMs: 1234, content: 'long answer' }),
      progress('stage1', 'sim/b', 'retrying'),
      progress('stage1', 'sim/b', 'failed', { error: 'The provider\nrefused   the call' }),
      event('stage1_complete', { data: [{ model: 'sim/a' }] }),
      event('stage2_start'),
      progress('stage2', 'sim/a', 'succeeded', { responseTimeMs: 800 }),
      event('stage2_complete', {
        data: [],
        metadata: {
          labelToModel: {},
          aggregateRankings: [
            { model: 'sim/a', averageRank: 1, rankingsCount: 1 },
            { model: 'sim/b', averageRank: 2.3333, rankingsCount: 1 },
          ],
        },
      }),
      event('stage3_start'),
      progress('stage3', 'sim/chair', 'succeeded', { content: 'the synthesis' }),
      event('stage3_complete', { data: { response: 'the synthesis' } }),
      event('title_complete', { data: { title: 'T' } }),
      event('complete'),
    ]);
    expect(lines).toEqual([
      'Stage 1: each council member answers the question.\n',
      'sim/a answered (1.2 s).\n',
      'sim/b: retrying.\n',
      'sim/b failed: The provider refused the call\n',
      '1 answer collected.\n',
      'Stage 2: each member ranks the answers, anonymised as Response A, B, …\n',
      'sim/a ranked the anonymised answers (0.8 s).\n',
      'Aggregate ranking: 1. sim/a (average rank 1), 2. sim/b (average rank 2.333).\n',
      'Stage 3: the chairman writes the synthesis.\n',
    ]);
  });

  it('vote: answers, votes by voter, a tie broken, the winner', () => {
    const lines = linesOf('vote', [
      event('vote_session_start', { mode: 'vote' }),
      event('stage1_start'),
      progress('answer', 'sim/v1', 'succeeded'),
      event('vote_start', { data: { labelMap: { 'Response A': 'sim/v1' } } }),
      progress('vote', 'sim/v2', 'succeeded'),
      event('vote_complete', {
        data: {
          votes: [
            { model: 'sim/v1', votedFor: 'Response B' },
            { model: 'sim/v2', votedFor: null },
          ],
          isTie: true,
          tiedLabels: ['Response A', 'Response B'],
        },
      }),
      event('tiebreak_start'),
      event('tiebreak_complete', { data: { model: 'sim/c', chosenLabel: 'Response B', method: 'chairman' } }),
      event('winner_declared', {
        data: {
          winnerLabel: 'Response B',
          winnerModel: 'sim/v3',
          voteCount: 1,
          totalVotes: 2,
          tiebroken: true,
        },
      }),
    ]);
    expect(lines).toEqual([
      'Vote: each model answers, then every model votes for the best anonymised answer.\n',
      'sim/v1 answered.\n',
      'Voting on the anonymised answers.\n',
      'sim/v2 voted.\n',
      'Votes: sim/v1 → Response B, sim/v2 → no valid vote.\n',
      'Tie between Response A, Response B.\n',
      'The vote is tied: a tiebreak decides.\n',
      'Tiebreak (chairman): Response B.\n',
      'Winner: Response B by sim/v3 (1 of 2 votes, after a tiebreak).\n',
    ]);
  });

  it('debate: the revision decisions', () => {
    expect(
      linesOf('debate', [
        event('revision_complete', {
          data: {
            revisions: [
              { model: 'sim/d1', decision: 'STAND' },
              { model: 'sim/d2', decision: 'REVISE' },
              { model: 'sim/d3', decision: null },
            ],
          },
        }),
        event('vote_start', { data: {} }),
      ]),
    ).toEqual([
      'Revisions: sim/d1 stood by its answer, sim/d2 revised, sim/d3 gave no readable decision.\n',
      'Vote: each model votes for the best revised answer.\n',
    ]);
  });

  it("jury: each juror's verdict and score, the tally, the final verdict", () => {
    expect(
      linesOf('jury', [
        event('deliberation_start'),
        progress('deliberation', 'sim/j1', 'succeeded', { content: 'assessment' }),
        event('juror_complete', { data: { model: 'sim/j1', verdict: 'APPROVE', average: 8.8 } }),
        progress('deliberation', 'sim/j2', 'failed', { error: 'timed out' }),
        event('all_jurors_complete', {
          data: {
            voteTally: { approve: 1, revise: 0, reject: 0 },
            majorityVerdict: 'APPROVE',
            failedJurors: [{ model: 'sim/j2', reason: 'timed out' }],
          },
        }),
        event('verdict_start'),
        event('verdict_complete', { data: { finalVerdict: 'APPROVE', reportText: 'r' } }),
      ]),
    ).toEqual([
      'The jurors assess the content.\n',
      'sim/j1: APPROVE, average score 8.8/10.\n',
      'sim/j2 failed: timed out\n',
      'Jurors: 1 APPROVE, 0 REVISE, 0 REJECT (majority APPROVE).\n',
      '1 juror failed.\n',
      'The foreman writes the verdict report.\n',
      'Final verdict: APPROVE.\n',
    ]);
  });

  it('delphi: rounds as statistics, panelists by number, never an estimate with its author', () => {
    const lines = linesOf('delphi', [
      event('delphi_start', { questionType: null }),
      progress('classify', 'sim/f', 'succeeded'),
      event('classify_complete', { data: { type: 'numeric', options: null } }),
      event('round_start', { round: 1 }),
      progress('round_1', 2, 'succeeded', { content: 'ESTIMATE: 12 by sim/p2' }),
      progress('round_1', 3, 'failed', { error: 'sim/p3 failed: provider refused' }),
      event('round_complete', {
        round: 1,
        data: {
          estimates: [
            { participantIndex: 1, estimate: 408351 },
            { participantIndex: 2, estimate: 532560 },
          ],
          stats: { median: 466831, min: 408351, max: 532560, cv: 0.0948 },
        },
      }),
      event('round_complete', {
        round: 2,
        data: {
          estimates: [{ participantIndex: 1, answer: 'Yes' }],
          stats: { mode: 'Yes', agreementPercentage: 75 },
        },
      }),
      event('convergence_reached', { round: 2 }),
      event('synthesis_start'),
    ]);
    expect(lines).toEqual([
      'Delphi: an anonymous panel estimates in rounds, seeing only the statistics of the last one.\n',
      'sim/f classified the question.\n',
      'Question classified as numeric.\n',
      'Round 1: the panelists estimate.\n',
      'Panelist 2 estimated.\n',
      'Panelist 3 failed.\n',
      'Round 1: 2 estimates, median 466,831 (range 408,351–532,560, coefficient of variation 0.095).\n',
      'Round 2: 1 answer, most often "Yes" (agreement 75%).\n',
      'The panel converged in round 2.\n',
      'The facilitator writes the report.\n',
    ]);
    expect(lines.join('')).not.toMatch(/sim\/p/);
  });

  it('says a call cut by a quorum or deadline, or stopped, was cut or stopped, not that it failed', () => {
    expect(
      linesOf('council', [
        progress('stage1', 'sim/a', 'failed', { error: 'cut: quorum reached' }),
        progress('stage1', 'sim/b', 'failed', { error: 'cancelled: the deliberation was stopped' }),
        progress('stage2', 'sim/c', 'failed', { error: 'stopped: the deliberation ended' }),
      ]),
    ).toEqual([
      'sim/a was cut: quorum reached\n',
      'sim/b was stopped: the deliberation was stopped\n',
      'sim/c was stopped: the deliberation ended\n',
    ]);
    // Delphi's panelists stay numbered, and their texts left out, as for failures.
    expect(
      linesOf('delphi', [progress('round_1', 2, 'failed', { error: 'cut: stage deadline passed' })]),
    ).toEqual(['Panelist 2 was cut.\n']);
  });

  it('keeps every line short and on one line, whatever a payload holds', () => {
    const [line] = linesOf('council', [
      progress('stage1', 'sim/a', 'failed', { error: `${'x'.repeat(5000)}\n\nmore` }),
    ]);
    expect(line.length).toBeLessThan(320);
    expect(line.trimEnd()).not.toContain('\n');
    // Payloads missing their fields, or of the wrong types, give what can be said.
    expect(
      linesOf('vote', [event('winner_declared', { data: 'nonsense' }), event('vote_complete', { data: 5 })]),
    ).toEqual(['Winner: ? (? of ? votes).\n']);
  });
});

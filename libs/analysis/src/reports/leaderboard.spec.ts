import type { MessageStatus, ReportInterval } from '@conclave/contracts';
import { ContestReportBuilder } from './contest';
import { leaderboardNote, overlapsNext } from './leaderboard';
import type { ReportItem, ReportStageRow } from './rows';

const interval = (lower: number, upper: number): ReportInterval => ({
  lower,
  upper,
  confidence: 0.95,
  method: 'wilson-score',
});

describe('leaderboard overlaps', () => {
  it('marks neighbours whose intervals overlap, touching ends included; null without an interval or a next', () => {
    expect(
      overlapsNext([interval(0.6, 0.9), interval(0.5, 0.7), interval(0.1, 0.5), null, interval(0, 1)]),
    ).toEqual([true, true, null, null, null]);
    expect(overlapsNext([interval(0.7, 0.9), interval(0.1, 0.3)])).toEqual([false, null]);
    expect(overlapsNext([])).toEqual([]);
  });

  it('says a leaderboard is not adjusted for multiple comparisons, from two entries on', () => {
    expect(leaderboardNote(1, 'win rate')).toBeNull();
    expect(leaderboardNote(3, 'win rate')).toMatch(
      /^3 models ordered by win rate, .*not adjusted for multiple comparisons.*not distinguishable at 95 %/,
    );
  });
});

const item = (index: number): ReportItem => ({
  index,
  messageId: `m-${index}`,
  mode: 'vote',
  status: 'complete' as MessageStatus,
  reference: null,
  key: null,
});

/** A vote item over `roster` won by `winner` with every vote. */
function voteRows(roster: string[], winner: string): ReportStageRow[] {
  const labels = Object.fromEntries(roster.map((m, i) => [`Response ${String.fromCharCode(65 + i)}`, m]));
  const winnerLabel = `Response ${String.fromCharCode(65 + roster.indexOf(winner))}`;
  const row = (stageType: string, model: string | null, data: Record<string, unknown>, participant = 0) => ({
    stageType,
    model,
    participant,
    data,
  });
  return [
    ...roster.map((m, i) => row('initial_answer', m, {}, i)),
    row('vote_label_map', null, labels),
    ...roster.map((m, i) => row('vote', m, { votedFor: winnerLabel }, i)),
    row('vote_tally', null, {
      tallies: { [winnerLabel]: roster.length },
      validVoteCount: roster.length,
      invalidVoteCount: 0,
      isTie: false,
      tiedLabels: [],
    }),
    row('vote_winner', winner, { winnerLabel, winnerModel: winner }),
  ];
}

describe('vote leaderboard', () => {
  it('flags neighbours that cannot be told apart and carries the note', () => {
    const builder = new ContestReportBuilder('vote');
    const roster = ['sim/a', 'sim/b', 'sim/c'];
    // a wins 10 of 20, b 9, c 1: a and b overlap, b and c do not.
    const winners = [...Array(10).fill('sim/a'), ...Array(9).fill('sim/b'), 'sim/c'] as string[];
    winners.forEach((winner, i) => builder.addItem(item(i), voteRows(roster, winner)));
    const vote = builder.result({ seed: 's', resamples: 50 });
    expect(vote.models.map((m) => [m.model, m.wins, m.overlapsNext])).toEqual([
      ['sim/a', 10, true],
      ['sim/b', 9, false],
      ['sim/c', 1, null],
    ]);
    expect(vote.leaderboardNote).toMatch(/^3 models ordered by win rate/);
  });
});

import { rowObject, stageRowsFrom, type DebateResult, type ModeFacts } from '@conclave/contracts';

/** The stored Result, partial while the deliberation runs. */
const read = (result: unknown): Partial<DebateResult> => (result ?? {}) as Partial<DebateResult>;

/** What the rest of the system knows about debate (it imports nothing but contracts: see ModeFacts). */
export const debateFacts: ModeFacts = {
  mode: 'debate',
  title: 'Debate',
  summary:
    'debate: models answer, read each other (anonymized) and revise, stand or merge, then vote; ' +
    'the winning revised answer is the result.',
  panelRole: 'debater',
  stageRoles: {},
  finalRole: 'winner',
  finalStage: null,
  anonymousWhileRunning: false,
  stageRows: stageRowsFrom({
    round1: ['initial_answer', 'round1_label_map'],
    revision: ['revision', 'revision_summary', 'revised_label_map'],
    vote: ['debate_vote', 'debate_vote_tally', 'debate_winner'],
  }),
  reference: 'winner',
  parsedAnswer: (row) => {
    const data = rowObject(row.data);
    if (row.stageType === 'revision') return data?.parseSuccess === true;
    return row.stageType === 'debate_vote' ? typeof data?.votedFor === 'string' : null;
  },
  // Every round-1 answer, every revised answer (the original where the call failed) and the winner.
  gradedAnswer: (row) =>
    row.stageType === 'initial_answer' || row.stageType === 'revision' || row.stageType === 'debate_winner'
      ? row.content
      : null,
  gradedFinal: (stageType) => stageType === 'debate_winner',
  result: {
    finalText: (result) => read(result).winner?.winnerResponse ?? null,
    finalAuthor: (result) => read(result).winner?.winnerModel,
    enoughAnswered: (result) => {
      const { round1, votes } = read(result);
      return round1 ? round1.length >= 2 && (votes ? votes.validVoteCount >= 1 : true) : null;
    },
    seated: (result) => (read(result).round1 ?? []).map((s) => s.model),
    unreadable: (result) => [
      ...(read(result).revisions ?? [])
        .filter((r) => r.decision === null)
        .map((r) => ({ model: r.model, stage: 'revision', why: 'its revision decision could not be read' })),
      ...(read(result).votes?.votes ?? [])
        .filter((v) => v.votedFor === null)
        .map((v) => ({ model: v.model, stage: 'vote', why: 'its vote could not be read' })),
    ],
  },
  roster: { models: 'models' },
  topLevelRoster: false,
  contentField: null,
};

import { rowObject, stageRowsFrom, type VoteResult, type ModeFacts } from '@conclave/contracts';

/** The stored Result, partial while the deliberation runs. */
const read = (result: unknown): Partial<VoteResult> => (result ?? {}) as Partial<VoteResult>;

/** What the rest of the system knows about vote (it imports nothing but contracts: see ModeFacts). */
export const voteFacts: ModeFacts = {
  mode: 'vote',
  title: 'Vote',
  summary:
    'vote: every model answers, then all vote for the best anonymized answer; the winning answer is the result ' +
    '(the chairman breaks a tie).',
  panelRole: 'voter',
  stageRoles: { tiebreak: 'chairman' },
  finalRole: 'winner',
  finalStage: null,
  anonymousWhileRunning: false,
  stageRows: stageRowsFrom({
    answer: ['initial_answer'],
    vote: ['vote_label_map', 'vote', 'vote_tally', 'vote_winner'],
    tiebreak: ['tiebreak'],
  }),
  reference: 'winner',
  parsedAnswer: (row) =>
    row.stageType === 'vote' ? typeof rowObject(row.data)?.votedFor === 'string' : null,
  // Every answer, and the winning one (its row holds the winner's answer).
  gradedAnswer: (row) =>
    row.stageType === 'initial_answer' || row.stageType === 'vote_winner' ? row.content : null,
  gradedFinal: (stageType) => stageType === 'vote_winner',
  result: {
    finalText: (result) => read(result).winner?.winnerResponse ?? null,
    finalAuthor: (result) => read(result).winner?.winnerModel,
    enoughAnswered: (result) => {
      const { stage1, votes } = read(result);
      return stage1 ? stage1.length >= 2 && (votes ? votes.validVoteCount >= 1 : true) : null;
    },
    seated: (result) => (read(result).stage1 ?? []).map((s) => s.model),
    unreadable: (result) =>
      (read(result).votes?.votes ?? [])
        .filter((v) => v.votedFor === null)
        .map((v) => ({ model: v.model, stage: 'vote', why: 'its vote could not be read' })),
  },
  roster: { models: 'models', chairman: 'chairmanModel' },
  topLevelRoster: false,
  contentField: null,
};

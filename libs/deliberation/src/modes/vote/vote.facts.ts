import { rowObject, stageRowsFrom, type ModeFacts } from '@conclave/contracts';

/** What the rest of the system knows about vote (data only: see ModeFacts). */
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
  roster: { models: 'models', chairman: 'chairmanModel' },
  topLevelRoster: false,
  contentField: null,
};

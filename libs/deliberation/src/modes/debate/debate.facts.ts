import { rowObject, stageRowsFrom, type ModeFacts } from '@conclave/contracts';

/** What the rest of the system knows about debate (data only: see ModeFacts). */
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
  roster: { models: 'models' },
  topLevelRoster: false,
  contentField: null,
};

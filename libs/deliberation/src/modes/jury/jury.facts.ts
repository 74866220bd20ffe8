import { rowObject, stageRowsFrom, type ModeFacts } from '@conclave/contracts';

/** What the rest of the system knows about jury (data only: see ModeFacts). */
export const juryFacts: ModeFacts = {
  mode: 'jury',
  title: 'Jury',
  summary:
    'jury: evaluates EXISTING content given in modeConfig.content (required); jurors score it on five dimensions ' +
    'and give a verdict, the foreman writes the verdict report. `question` says what to evaluate.',
  panelRole: 'juror',
  stageRoles: { verdict: 'foreman' },
  finalRole: 'foreman',
  finalStage: { stage: 'verdict', startEvent: 'verdict_start' },
  anonymousWhileRunning: false,
  stageRows: stageRowsFrom({
    present: ['present'],
    deliberation: ['deliberation', 'juror_summary'],
    verdict: ['verdict'],
  }),
  reference: 'verdict',
  parsedAnswer: (row) =>
    row.stageType === 'deliberation' ? rowObject(row.data)?.parseSuccess === true : null,
  roster: { models: 'jurorModels', chairman: 'foremanModel' },
  topLevelRoster: false,
  contentField: 'content',
};

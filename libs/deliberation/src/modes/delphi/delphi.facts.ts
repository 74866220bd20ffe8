import { rowObject, type ModeFacts } from '@conclave/contracts';

/** What the rest of the system knows about Delphi (data only: see ModeFacts). */
export const delphiFacts: ModeFacts = {
  mode: 'delphi',
  title: 'Delphi',
  summary:
    'delphi: anonymous panelists estimate (a number, or a choice among options) over rounds with statistical ' +
    'feedback until they converge; the facilitator writes the report.',
  panelRole: 'panelist',
  stageRoles: { classify: 'facilitator', synthesis: 'facilitator' },
  finalRole: 'facilitator',
  finalStage: { stage: 'synthesis', startEvent: 'synthesis_start' },
  // 05-delphi.md: estimates are anonymous during the exercise, attributed once it is over.
  anonymousWhileRunning: true,
  stageRows: (stage) => {
    if (/^round_\d+$/.test(stage)) return [stage, `${stage}_stats`];
    return stage === 'classify' || stage === 'synthesis' ? [stage] : [];
  },
  reference: 'estimate',
  parsedAnswer: (row) => {
    const data = rowObject(row.data);
    if (!/^round_\d+$/.test(row.stageType) || data?.carriedForward === true) return null;
    return data?.type === 'numeric' ? typeof data.estimate === 'number' : typeof data?.answer === 'string';
  },
  roster: { models: 'panelistModels', chairman: 'facilitatorModel' },
  topLevelRoster: false,
  contentField: null,
};

import { rowObject, stageRowsFrom, type JuryResult, type ModeFacts } from '@conclave/contracts';

/** The stored Result, partial while the deliberation runs. */
const read = (result: unknown): Partial<JuryResult> => (result ?? {}) as Partial<JuryResult>;

/** What the rest of the system knows about jury (it imports nothing but contracts: see ModeFacts). */
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
  result: {
    finalText: (result) => read(result).foreman?.reportText ?? null,
    finalAuthor: (result) => read(result).foreman?.model,
    enoughAnswered: (result) => {
      const { jurorSummary } = read(result);
      return jurorSummary ? jurorSummary.successfulJurors >= 2 : null;
    },
    seated: (result) => (read(result).jurors ?? []).map((j) => j.model),
    unreadable: (result) =>
      (read(result).jurors ?? [])
        .filter((j) => !j.parseSuccess)
        .map((j) => ({
          model: j.model,
          stage: 'deliberation',
          why: j.verdict === null ? 'its verdict could not be read' : 'some of its scores could not be read',
        })),
  },
  roster: { models: 'jurorModels', chairman: 'foremanModel' },
  topLevelRoster: false,
  contentField: 'content',
};

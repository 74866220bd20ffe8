import { rowObject, type DelphiResult, type ModeFacts } from '@conclave/contracts';

/** The stored Result, partial while the deliberation runs. */
const read = (result: unknown): Partial<DelphiResult> => (result ?? {}) as Partial<DelphiResult>;

/** What the rest of the system knows about Delphi (it imports nothing but contracts: see ModeFacts). */
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
  // Each panelist's estimate of each round (a carried-forward one is graded where it was given), and
  // each round's panel value (the stats row's median, or its mode): the last round's is the panel's
  // final value. An estimate the parser could not read is graded as no answer (unreadable).
  gradedAnswer: (row) => {
    const data = rowObject(row.data);
    if (/^round_\d+_stats$/.test(row.stageType)) {
      if (typeof data?.median === 'number') return String(data.median);
      return typeof data?.mode === 'string' ? data.mode : null;
    }
    if (!/^round_\d+$/.test(row.stageType) || data?.carriedForward === true) return null;
    if (data?.type === 'numeric') return typeof data.estimate === 'number' ? String(data.estimate) : '';
    return typeof data?.answer === 'string' ? data.answer : '';
  },
  gradedFinal: (stageType) => /^round_\d+_stats$/.test(stageType),
  result: {
    finalText: (result) => read(result).report?.report ?? null,
    finalAuthor: (result) => read(result).report?.facilitatorModel,
    enoughAnswered: (result) => {
      const { rounds } = read(result);
      return rounds?.length ? rounds[0].estimates.length >= 3 : null;
    },
    // Panelists in the order they first gave a valid estimate.
    seated: (result) => [
      ...new Set((read(result).rounds ?? []).flatMap((round) => round.estimates.map((e) => e.model))),
    ],
    // Unreadable estimates are told from the calls (libs/outcomes, unreadableEstimates).
    unreadable: () => [],
  },
  roster: { models: 'panelistModels', chairman: 'facilitatorModel' },
  topLevelRoster: false,
  contentField: null,
};

import { rowObject, stageRowsFrom, type CouncilResult, type ModeFacts } from '@conclave/contracts';

/** The stored Result, partial while the deliberation runs. */
const read = (result: unknown): Partial<CouncilResult> => (result ?? {}) as Partial<CouncilResult>;

/** What the rest of the system knows about council (it imports nothing but contracts: see ModeFacts). */
export const councilFacts: ModeFacts = {
  mode: 'council',
  title: 'Council',
  summary:
    'council (default): every model answers, they rank the anonymized answers, the chairman writes a synthesis. ' +
    'Multi-turn: pass the conversationId of an earlier council result to continue it.',
  panelRole: 'council',
  stageRoles: { stage3: 'chairman' },
  finalRole: 'chairman',
  finalStage: { stage: 'stage3', startEvent: 'stage3_start' },
  anonymousWhileRunning: false,
  stageRows: stageRowsFrom({
    stage1: ['stage1'],
    stage2: ['stage2_label_map', 'stage2', 'stage2_aggregate'],
    stage3: ['stage3'],
  }),
  reference: 'winner',
  parsedAnswer: (row) => {
    const data = rowObject(row.data);
    return row.stageType === 'stage2'
      ? Array.isArray(data?.parsedRanking) && data.parsedRanking.length > 0
      : null;
  },
  // Each member's own answer (stage 1) and the chairman's synthesis.
  gradedAnswer: (row) => (row.stageType === 'stage1' || row.stageType === 'stage3' ? row.content : null),
  gradedFinal: (stageType) => stageType === 'stage3',
  result: {
    finalText: (result) => read(result).stage3?.response ?? null,
    finalAuthor: (result) => read(result).stage3?.model,
    enoughAnswered: (result) => {
      const { stage1 } = read(result);
      return stage1 ? stage1.length >= 2 : null;
    },
    seated: (result) => (read(result).stage1 ?? []).map((s) => s.model),
    unreadable: (result) =>
      (read(result).stage2 ?? [])
        .filter((r) => r.parsedRanking.length === 0)
        .map((r) => ({ model: r.model, stage: 'stage2', why: 'its ranking could not be read' })),
  },
  roster: { models: 'councilModels', chairman: 'chairmanModel' },
  topLevelRoster: true,
  contentField: null,
};

import type { StageRow } from '../engine/types';

/**
 * The call key of a roster position (1-based) in modes where the same model may take part twice:
 * unique within a stage and the same on a retried stage, so stored outcomes are found again.
 */
export const participantKey = (participant: number): string => `p${participant}`;

/** The roster position a `participantKey` names. */
export const participantOfKey = (key: string): number => Number(key.slice(1));

/** A panelist's first answer, told apart from another seat of the same model by its position. */
export interface SeatedAnswer {
  participant: number;
  model: string;
  response: string;
  responseTimeMs: number;
}

/** The `initial_answer` rows (vote, debate) in roster order. */
export function initialAnswers(rows: readonly StageRow[]): SeatedAnswer[] {
  return rows
    .filter((r) => r.stageType === 'initial_answer')
    .sort((a, b) => (a.participant ?? 0) - (b.participant ?? 0))
    .map((r) => ({
      participant: r.participant ?? 0,
      model: r.model ?? '',
      response: r.content,
      responseTimeMs: r.responseTimeMs ?? 0,
    }));
}

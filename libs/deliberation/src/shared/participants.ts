/**
 * The call key of a roster position (1-based) in modes where the same model may take part twice:
 * unique within a stage and the same on a retried stage, so stored outcomes are found again.
 */
export const participantKey = (participant: number): string => `p${participant}`;

/** The roster position a `participantKey` names. */
export const participantOfKey = (key: string): number => Number(key.slice(1));

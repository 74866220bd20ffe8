import type { CallSummary, ModeName, Usage } from '@conclave/contracts';

/** Each mode's panel role and the role of whoever writes its final text (the mode documents' names). */
export const PANEL_ROLE: Record<ModeName, string> = {
  council: 'council',
  vote: 'voter',
  jury: 'juror',
  debate: 'debater',
  delphi: 'panelist',
};

/** How a Delphi panelist is named while the exercise runs (05-delphi.md: anonymous until it is over). */
export const ANONYMOUS_PANELIST = 'a panelist';

/** The role a call of `stage` was made in. */
export function roleOf(mode: ModeName, stage: string): string {
  switch (mode) {
    case 'council':
      return stage === 'stage3' ? 'chairman' : PANEL_ROLE.council;
    case 'vote':
      return stage === 'tiebreak' ? 'chairman' : PANEL_ROLE.vote;
    case 'jury':
      return stage === 'verdict' ? 'foreman' : PANEL_ROLE.jury;
    case 'delphi':
      return stage === 'classify' || stage === 'synthesis' ? 'facilitator' : PANEL_ROLE.delphi;
    default:
      return PANEL_ROLE[mode] ?? 'panelist';
  }
}

/** The stage whose single call writes the final text, for modes where one model writes it. */
export const FINAL_STAGE: Partial<Record<ModeName, string>> = {
  council: 'stage3',
  jury: 'verdict',
  delphi: 'synthesis',
};

/** The calls one seat made: the k-th call of its model in each stage (a model may sit twice). */
export function seatCalls(calls: readonly CallSummary[], model: string, occurrence: number): CallSummary[] {
  const byStage = new Map<string, CallSummary[]>();
  for (const call of calls) {
    if (call.model !== model) continue;
    byStage.set(call.stage, [...(byStage.get(call.stage) ?? []), call]);
  }
  return [...byStage.values()].flatMap((list) => (list[occurrence] ? [list[occurrence]] : []));
}

/** Tokens and cost summed over calls that reported them; undefined when none did. */
export function usageOf(calls: readonly CallSummary[]): Usage | undefined {
  const reported = calls.filter(
    (c) => c.promptTokens !== null || c.completionTokens !== null || c.costUsd !== null,
  );
  if (reported.length === 0) return undefined;
  return {
    promptTokens: reported.reduce((sum, c) => sum + (c.promptTokens ?? 0), 0),
    completionTokens: reported.reduce((sum, c) => sum + (c.completionTokens ?? 0), 0),
    costUsd: reported.reduce((sum, c) => sum + (c.costUsd ?? 0), 0),
  };
}

/** Numbers each repeated item: ['a', 'b', 'a'] gives [0, 0, 1]. */
export function occurrences(models: readonly string[]): number[] {
  const seen = new Map<string, number>();
  return models.map((model) => {
    const n = seen.get(model) ?? 0;
    seen.set(model, n + 1);
    return n;
  });
}

/** The k-th item of `items` whose model is `model`. */
export const nth = <T extends { model: string }>(
  items: readonly T[] | undefined,
  model: string,
  k: number,
): T | undefined => (items ?? []).filter((item) => item.model === model)[k];

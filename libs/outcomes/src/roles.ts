import { MODE_NAMES, roleOfStage, type CallSummary, type ModeName, type Usage } from '@conclave/contracts';
import { MODE_FACTS, modeFacts } from '@conclave/deliberation/facts';

/** Each mode's panel role (the mode documents' names), as each mode declares it (ModeFacts). */
export const PANEL_ROLE = Object.fromEntries(
  MODE_NAMES.map((mode) => [mode, MODE_FACTS[mode].panelRole]),
) as Record<ModeName, string>;

/** How a Delphi panelist is named while the exercise runs (05-delphi.md: anonymous until it is over). */
export const ANONYMOUS_PANELIST = 'a panelist';

/** The role a call of `stage` was made in. */
export function roleOf(mode: ModeName, stage: string): string {
  const facts = modeFacts(mode);
  return facts ? roleOfStage(facts, stage) : 'panelist';
}

/** The stage whose single call writes the final text, for modes where one model writes it. */
export const finalStageOf = (mode: ModeName): string | undefined => modeFacts(mode)?.finalStage?.stage;

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

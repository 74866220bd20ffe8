import type {
  CouncilResult,
  DebateResult,
  DeliberationView,
  DelphiResult,
  JuryResult,
  VoteResult,
} from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';

/** Every mode's result fields, each optional: what a stored view may hold whatever its mode. */
export type AnyResult = Partial<CouncilResult & VoteResult & DebateResult & JuryResult & DelphiResult>;

/**
 * The mode's final text: the chairman's synthesis, the winning answer, the foreman's or the
 * facilitator's report. Null while it does not exist (still running, or its author failed).
 */
export function finalTextOf(view: DeliberationView<AnyResult | null | unknown>): string | null {
  return modeFacts(view.mode)?.result.finalText(view.result ?? {}) ?? null;
}

import type {
  CouncilResult,
  DebateResult,
  DeliberationView,
  DelphiResult,
  JuryResult,
  VoteResult,
} from '@conclave/contracts';

/** Every mode's result fields, each optional: what a stored view may hold whatever its mode. */
export type AnyResult = Partial<CouncilResult & VoteResult & DebateResult & JuryResult & DelphiResult>;

/**
 * The mode's final text: the chairman's synthesis, the winning answer, the foreman's or the
 * facilitator's report. Null while it does not exist (still running, or its author failed).
 */
export function finalTextOf(view: DeliberationView<AnyResult | null | unknown>): string | null {
  const result = (view.result ?? {}) as AnyResult;
  switch (view.mode) {
    case 'council':
      return result.stage3?.response ?? null;
    case 'vote':
    case 'debate':
      return result.winner?.winnerResponse ?? null;
    case 'jury':
      return result.foreman?.reportText ?? null;
    case 'delphi':
      return result.report?.report ?? null;
    default:
      return null;
  }
}

import type { FinishReason } from './calls';

/**
 * Why a participant's contribution is missing from a result:
 * - `failed`: its call failed (provider error, timeout, …);
 * - `cancelled`: the deliberation was stopped while it ran (stored error `cancelled: …`);
 * - `cut`: the stage went on without it (a quorum or stage deadline; stored error `cut: …`), or
 *   the deliberation ended while it ran (cap, failure: stored error `stopped: …`);
 * - `unreadable`: it answered, but its mode could not read the answer (a ranking, vote, verdict,
 *   revision decision or estimate).
 */
export type MissingKind = 'failed' | 'cancelled' | 'cut' | 'unreadable';

/** One participant's contribution a result lacks, and why, in words a user may see. */
export interface MissingContribution {
  model: string;
  /** Its role in the mode: `council`, `chairman`, `voter`, `juror`, `foreman`, `debater`, `panelist`, `facilitator`. */
  role: string;
  stage: string;
  kind: MissingKind;
  why: string;
}

/**
 * Who was asked and did not give the mode what it needed (DeliberationView.degraded). Null on a
 * view when every participant answered readably.
 */
export interface Degradation {
  /** Panel members asked in the first panel stage, and how many of them answered there. */
  asked: number;
  answered: number;
  /** One line for the top of any output, e.g. `2 of 3 answered — sim/x: upstream error`. */
  summary: string;
  missing: MissingContribution[];
}

/** A call of a stage that was never committed which finished: its answer, kept. */
export interface PartialAnswer {
  stage: string;
  /** As `model_progress` shows it: the model id, or Delphi's 1-based panelist number. */
  participant: string | number;
  model: string;
  content: string;
  finishReason: FinishReason | null;
}

/**
 * What a deliberation that ended before finishing a stage had made of it (DeliberationView.partial):
 * the answers of the calls that finished in the stage that was never committed, and the calls of it
 * that did not finish. Everything committed before is in the mode's `result` as usual.
 */
export interface PartialResult {
  /** How the deliberation ended. */
  reason: 'cancelled' | 'failed';
  /** The stored reason (the cancel's or the failure's message). */
  why: string | null;
  /** The stage that was never committed (a run that ended between stages has no partial). */
  stage: string;
  answers: PartialAnswer[];
  cut: MissingContribution[];
}

import { STOPPED_CALL_ERROR } from './ending';
import type { CallOutcome, CountsAsAnswered, PlannedCall, StageGate, SuccessfulCall } from './types';

export type { CountsAsAnswered, StageGate };

/** The gate's test for stages whose members give free text: any non-blank answer counts. */
export const hasAnswer: CountsAsAnswered = (outcome) => outcome.content.trim().length > 0;

/**
 * Deadlines, quorum and fallbacks (an extension to the mode documents, opt-in per request; see
 * docs/ARCHITECTURE.md "Deadlines, quorum and fallbacks"). The decisions are pure functions of
 * what has been stored and what has arrived, so a retried stage job reaches the same decision.
 */

/** What a failed call's error starts with when the stage went on without it. */
export const CUT_PREFIX = 'cut: ';

/** The gate options a mode's config carries (every mode's `modeConfig.quorum` / `stageDeadlineMs`). */
export interface GateOptions {
  quorum?: number;
  stageDeadlineMs?: number;
}

export const quorumReason = (k: number): string => `${CUT_PREFIX}quorum of ${k} reached`;
export const deadlineReason = (ms: number): string => `${CUT_PREFIX}stage deadline of ${ms} ms passed`;

export const isCut = (outcome: CallOutcome | undefined): boolean =>
  outcome !== undefined && !outcome.ok && outcome.error.startsWith(CUT_PREFIX);

/** A call that failed because the deliberation was stopped or the stage went on without it. */
export const isStopped = (outcome: CallOutcome): boolean =>
  !outcome.ok &&
  (outcome.error.startsWith(CUT_PREFIX) ||
    (Object.values(STOPPED_CALL_ERROR) as string[]).includes(outcome.error));

/**
 * The answers a stage of `members` waits for: `quorum` as a count (at most the members), or as a
 * fraction of them (0 < f < 1, rounded up); never fewer than the mode's minimum. Null when that
 * means every member (today's behaviour).
 */
export function stageQuorum(quorum: number | undefined, members: number, minimum: number): number | null {
  if (quorum === undefined) return null;
  const k = Math.max(quorum < 1 ? Math.ceil(quorum * members) : Math.floor(quorum), minimum, 1);
  return k >= members ? null : k;
}

/** The gate of a stage of `members` calls under the mode's options; null when none is set. */
export function memberGate(
  options: GateOptions,
  members: number,
  minimum: number,
  counts: CountsAsAnswered,
): StageGate | null {
  const quorum = stageQuorum(options.quorum, members, minimum);
  const deadlineMs = options.stageDeadlineMs ?? null;
  if (quorum === null && deadlineMs === null) return null;
  return { quorum, deadlineMs, minimum, counts };
}

/** Where a stage stands, for its gate. */
export interface GateState {
  /** The settled outcomes of members (stored, or arrived in this run); the gate counts the readable ones. */
  settled: readonly CallOutcome[];
  /** Members whose call has not settled. */
  pending: number;
  deadlinePassed: boolean;
  /** The reason of a cut an earlier run of the stage stored: the decision was made, it stands. */
  storedCut?: string | null;
}

/** How many of `settled` answered in a way the stage can use. */
export const countAnswered = (gate: StageGate, settled: readonly CallOutcome[]): number =>
  settled.filter((outcome) => outcome.ok && gate.counts(outcome)).length;

/** The reason to cut the calls still running, or null to wait for them. */
export function cutDecision(gate: StageGate, state: GateState): string | null {
  if (state.pending === 0) return null;
  if (state.storedCut) return state.storedCut;
  const answered = countAnswered(gate, state.settled);
  if (gate.quorum !== null && answered >= gate.quorum) return quorumReason(gate.quorum);
  if (gate.deadlineMs !== null && state.deadlinePassed && answered >= gate.minimum) {
    return deadlineReason(gate.deadlineMs);
  }
  return null;
}

/** A call the stage went on without, before it was made (a retried stage whose decision stands). */
export const cutOutcome = (call: PlannedCall, reason: string): CallOutcome => ({
  ok: false,
  key: call.key,
  model: call.model,
  error: reason,
  responseTimeMs: 0,
});

/** A single seat's models in the order they are asked: the call, then its fallbacks. */
export const chainOf = (call: PlannedCall): PlannedCall[] => [call, ...(call.fallbacks ?? [])];

export type ChainState =
  /** The seat is settled: `outcome` stands for it (the accepted answer, or the last failure). */
  | { kind: 'done'; outcome: CallOutcome; attempts: CallOutcome[] }
  /** `index` is the next model to ask (nothing stored for it yet). */
  | { kind: 'next'; index: number; attempts: CallOutcome[] };

/**
 * A seat's state from the stored outcomes: the first answer the mode accepts ends it; a failed or
 * unreadable one passes it to the next model; the last model's outcome stands whatever it is; a
 * call stopped with the deliberation (or cut) ends it.
 */
export function chainState(
  chain: readonly PlannedCall[],
  outcomeOf: (key: string) => CallOutcome | undefined,
  accepts: (outcome: SuccessfulCall) => boolean,
): ChainState {
  const attempts: CallOutcome[] = [];
  for (let index = 0; index < chain.length; index++) {
    const outcome = outcomeOf(chain[index].key);
    if (!outcome) return { kind: 'next', index, attempts };
    attempts.push(outcome);
    const ends = outcome.ok ? accepts(outcome) : isStopped(outcome);
    if (ends || index === chain.length - 1) return { kind: 'done', outcome, attempts };
  }
  throw new Error('a seat with no model to ask');
}

/** A fallback's key: unique in the stage, stable across runs. */
export const fallbackKey = (primaryKey: string, index: number, model: string): string =>
  `${primaryKey}~fallback${index}:${model}`;

/**
 * A single-seat call with its fallbacks: the same prompt put to each fallback model in turn.
 * `participant` follows the model (Delphi's facilitator is not anonymous).
 */
export function withFallbacks(call: PlannedCall, fallbacks: readonly string[] | undefined): PlannedCall {
  if (!fallbacks || fallbacks.length === 0) return call;
  return {
    ...call,
    fallbacks: fallbacks.map((model, i) => ({
      key: fallbackKey(call.key, i + 1, model),
      participant: typeof call.participant === 'number' ? call.participant : model,
      model,
      messages: call.messages,
    })),
  };
}

/** `a (error), b (error)`: the models of a seat that failed before the one that answered. */
export const describeAttempts = (attempts: readonly CallOutcome[]): string =>
  attempts.map((a) => `${a.model} (${a.ok ? 'unreadable answer' : a.error})`).join(', ');

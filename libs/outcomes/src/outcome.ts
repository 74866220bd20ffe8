import { isTerminalStatus, type DeliberationView } from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';
import { finalTextOf, type AnyResult } from './final-text';
import { modeSummary } from './mode-summary';
import type { DeliberationOutcome, FinalAuthor, OutcomeFailure } from './outcome.types';
import { panelistsOf } from './panelists';
import { finalStageOf, roleOf } from './roles';
import { degradationOf } from './shortfall';

/** The model writing the final text, once known; failed when its call failed and no text exists. */
function finalAuthorOf(view: DeliberationView, result: AnyResult, text: string | null): FinalAuthor | null {
  const facts = modeFacts(view.mode);
  const role = facts?.finalRole as string;
  const written = facts?.result.finalAuthor(result);
  // No final stage: the final text is the winner's own answer (vote, debate).
  if (facts && facts.finalStage === null) {
    return written !== undefined ? { role, model: written, failed: false } : null;
  }
  const calls = view.calls.filter((c) => c.stage === finalStageOf(view.mode));
  // A seat with fallbacks (issue 32) stores a call per model asked, in order: those that failed
  // before the one that wrote (or before the last, when none did).
  const failedCalls = calls.filter((c) => !c.ok);
  const failedBefore = (upTo: number) =>
    upTo > 0
      ? {
          failedBefore: failedCalls
            .slice(0, upTo)
            .map((c) => ({ model: c.model, error: c.error ?? 'the call failed' })),
        }
      : {};
  if (text !== null && written)
    return { role, model: written, failed: false, ...failedBefore(failedCalls.length) };
  const failed = failedCalls.at(-1);
  if (failed && !calls.some((c) => c.ok)) {
    return {
      role,
      model: failed.model,
      failed: true,
      error: failed.error ?? 'the call failed',
      ...failedBefore(failedCalls.length - 1),
    };
  }
  return written ? { role, model: written, failed: false, ...failedBefore(failedCalls.length) } : null;
}

/**
 * Whether enough panelists answered for the mode's rules (council, vote, debate: 2 answers, and a
 * readable vote; jury: 2 jurors; Delphi: 3 panelists in round 1), judged on the stages reached.
 */
function enoughAnsweredOf(
  view: DeliberationView,
  result: AnyResult,
  author: FinalAuthor | null,
): boolean | null {
  // A run that failed for another reason than its final author failed short of the mode's minimum.
  if (view.status === 'failed' && !author?.failed) return false;
  return modeFacts(view.mode)?.result.enoughAnswered(result) ?? null;
}

/**
 * A deliberation's outcome as data, for any mode: the final text only when it really exists, who
 * failed and why, each panelist by name with what it answered, and the mode's own summary.
 */
export function outcomeOf(
  view: DeliberationView,
  links: { web: string; transcript: string },
): DeliberationOutcome {
  const result = (view.result ?? {}) as AnyResult;
  const written = finalTextOf(view);
  const finalAuthor = finalAuthorOf(view, result, written);
  const degraded = degradationOf(view);
  const partialStage = view.partial ?? null;
  const finalText = finalAuthor?.failed ? null : written;
  const failures: OutcomeFailure[] = view.calls
    .filter((c) => !c.ok)
    .map((c) => ({
      model: c.model,
      role: roleOf(view.mode, c.stage),
      stage: c.stage,
      error: c.error ?? 'the call failed',
    }));
  const terminal = isTerminalStatus(view.status);
  // 05-delphi.md: estimates are anonymous during the exercise, attributed once it is over.
  const attributed = !modeFacts(view.mode)?.anonymousWhileRunning || terminal;
  return {
    messageId: view.messageId,
    conversationId: view.conversationId,
    mode: view.mode,
    status: view.status,
    finalText,
    finalAuthor,
    partial:
      view.status === 'cancelled' ||
      view.status === 'failed' ||
      failures.length > 0 ||
      degraded !== null ||
      (terminal && finalText === null),
    enoughAnswered: enoughAnsweredOf(view, result, finalAuthor),
    degraded,
    partialStage,
    failures,
    panelists: panelistsOf(view, attributed),
    ...modeSummary(view, attributed),
    usage: { ...view.usage },
    links: { web: links.web, transcript: links.transcript },
    error: view.error,
    ...(view.grades ? { grades: view.grades } : {}),
  };
}

import { cleanTitle, fallbackTitle } from '../shared/title';
import type {
  AnyModeDefinition,
  CallOutcome,
  DeliberationContext,
  DeliberationStore,
  LoadedDeliberation,
  PlannedCall,
  StageWrite,
} from './types';

/** The title call's outcome and the title it gives, as a stage write stores them. */
export type TitleFields = Pick<StageWrite, 'titleOutcome' | 'conversationTitle'>;

/**
 * The title call of a new conversation, made by the first stage that calls models (a mode may
 * open with a stage that only presents, as jury does): none when the message needs no title, one
 * is stored, or an earlier stage has called models already (its run made the title, or the
 * title falls back to the question's first words at the end).
 */
export function titleCallFor(
  loaded: LoadedDeliberation,
  mode: AnyModeDefinition,
  ctx: DeliberationContext<unknown>,
  stage: string,
): PlannedCall | null {
  if (!loaded.needsTitle || (loaded.outcomes.title?.length ?? 0) > 0) return null;
  const earlier = Object.entries(loaded.outcomes).some(
    ([other, outcomes]) => other !== stage && other !== 'title' && outcomes.length > 0,
  );
  if (earlier) return null;
  const { model, messages } = mode.titleCall(ctx);
  return { key: 'title', participant: model, model, messages };
}

/** The title call's outcome and the title it gives: its cleaned answer, else the question's first words. */
export function titleFields(loaded: LoadedDeliberation, outcome: CallOutcome): TitleFields {
  const title = (outcome.ok ? cleanTitle(outcome.content) : null) ?? fallbackTitle(loaded.question);
  return { titleOutcome: outcome, conversationTitle: title };
}

/**
 * The title call runs beside the pipeline; give one still in flight a short grace period
 * (`graceMs`), until its outcome is stored.
 */
export async function awaitTitle(
  store: Pick<DeliberationStore, 'loadOutcomes'>,
  messageId: string,
  graceMs: number,
  now: () => number,
): Promise<void> {
  const deadline = now() + graceMs;
  // The title call's outcome and the title are stored in one transaction: a stored outcome means
  // the title is set. Asked again after 25 ms, then less and less often (a title that never
  // comes costs a dozen queries, not one every 25 ms).
  let wait = 25;
  while ((await store.loadOutcomes(messageId, 'title')).length === 0 && now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(wait, Math.max(1, deadline - now()))));
    wait = Math.min(wait * 2, 400);
  }
}

import type { ChatMessage } from '@conclave/llm';
import type {
  CallOutcome,
  DeliberationContext,
  ModeEvent,
  PlannedCall,
  StageReduction,
  StageRow,
  SuccessfulCall,
} from '../engine/types';
import { failure, modeEvent, NO_USAGE, usageOf } from '../engine/reductions';
import { describeAttempts } from '../engine/quorum';

/** A call that puts one prompt to a model (after the conversation so far, if given), shown by its id. */
export const promptCall = (
  key: string,
  model: string,
  prompt: string,
  history: readonly ChatMessage[] = [],
): PlannedCall => ({
  key,
  participant: model,
  model,
  messages: [...history, { role: 'user', content: prompt }],
});

/** The calls that answered, in the order given. */
export const answeredCalls = (outcomes: readonly CallOutcome[]): SuccessfulCall[] =>
  outcomes.filter((o): o is SuccessfulCall => o.ok);

/** `model (error), model (error)`: the failed calls, for a failure message. */
export const describeFailures = (outcomes: readonly CallOutcome[]): string =>
  outcomes.flatMap((o) => (o.ok ? [] : [`${o.model} (${o.error})`])).join(', ');

/**
 * The end of a deliberation whose closing stage, one model's call (a chairman's synthesis, a
 * foreman's report, a facilitator's report), did not answer: who failed at what, why, what is kept.
 */
export const soleCallFailure = (
  failed: { role: string; model: string; task: string; kept: string },
  outcome: CallOutcome | undefined,
  /** Every model the seat asked, when it had fallbacks (the last is `outcome`). */
  attempts?: readonly CallOutcome[],
): StageReduction =>
  failure(
    `The ${failed.role} model ${failed.model} failed to ${failed.task} ` +
      `(${outcome && !outcome.ok ? outcome.error : 'no answer'}). ` +
      (attempts && attempts.length > 1
        ? `Asked before it, and failed too: ${describeAttempts(attempts.slice(0, -1))}. `
        : '') +
      failed.kept,
  );

/** The event that opens a deliberation: its ids, then what the mode adds. */
export const openingEvent = <Config>(
  type: string,
  ctx: DeliberationContext<Config>,
  extra: Record<string, unknown> = {},
): ModeEvent => modeEvent(type, { conversationId: ctx.conversationId, messageId: ctx.messageId, ...extra });

/** A row no model call wrote (a label map, a tally, a summary): no model, no role, no usage. */
export const recordRow = (
  stageType: string,
  stageOrder: number,
  content: string,
  parsedData: Record<string, unknown>,
): StageRow => ({ stageType, stageOrder, model: null, role: null, content, parsedData, ...NO_USAGE });

/** A row one model call wrote: its model, its answer and its usage. */
export const callRow = (
  stageType: string,
  stageOrder: number,
  role: string,
  call: SuccessfulCall,
  parsedData: Record<string, unknown>,
): StageRow => ({
  stageType,
  stageOrder,
  model: call.model,
  role,
  content: call.content,
  parsedData,
  ...usageOf(call),
});

/** The usage columns of a row that stands for a call which may have failed (then: none). */
export const usageOfOutcome = (outcome: CallOutcome | undefined) =>
  outcome?.ok ? usageOf(outcome) : NO_USAGE;

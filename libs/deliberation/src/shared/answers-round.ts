import type { Stage1Response } from '@conclave/contracts';
import type { ChatMessage } from '@conclave/llm';
import { failure, modeEvent } from '../engine/reductions';
import type { CallOutcome, PlannedCall, StageReduction, StageRow, SuccessfulCall } from '../engine/types';
import { answeredCalls, callRow, describeFailures, promptCall } from './calls';
import { initialAnswers, participantKey, participantOfKey } from './participants';

/**
 * The first round of council, vote and debate: every panelist answers the question on its own.
 * The modes differ only in the names below; the rule is one: too few answers end the deliberation,
 * else each answer is stored as a `respondent` row and delivered in one event.
 */
export interface AnswersRound {
  /** The row type and order of an answer. */
  stageType: string;
  stageOrder: number;
  /**
   * Whether the panel is keyed by roster position (call keys are `participantKey`s and rows record
   * the position), so the same model can sit twice; else by model id.
   */
  seated: boolean;
  /** What an answer's row keeps in parsedData; nothing by default. */
  parsedData?(call: SuccessfulCall): Record<string, unknown>;
  /** Rows stored before the answers (debate's round-1 label map). */
  leadingRows?(answered: SuccessfulCall[]): StageRow[];
  /** The event that delivers the answers, as `{ data: Stage1Response[] }`. */
  event: string;
  /** The stage that follows. */
  next: string;
  /** Fewer answers than this end the deliberation. */
  minAnswers: number;
  /** Who failed, as in `All {panel} failed to answer: …`. */
  panel: string;
  /** What is missing, as in `Only {model} answered; {need}. Failed: …`. */
  need: string;
}

/** One call a panelist, each asked the question (after the conversation so far, if given). */
export function answersRoundCalls(
  round: Pick<AnswersRound, 'seated'>,
  models: readonly string[],
  question: string,
  history: readonly ChatMessage[] = [],
): PlannedCall[] {
  return models.map((model, i) =>
    promptCall(round.seated ? participantKey(i) : model, model, question, history),
  );
}

export function reduceAnswersRound(round: AnswersRound, outcomes: CallOutcome[]): StageReduction {
  const answered = answeredCalls(outcomes);
  if (answered.length === 0) {
    return failure(`All ${round.panel} failed to answer: ${describeFailures(outcomes)}.`);
  }
  if (answered.length < round.minAnswers) {
    return failure(
      `Only ${answered[0].model} answered; ${round.need}. Failed: ${describeFailures(outcomes)}.`,
    );
  }
  const data: Stage1Response[] = answered.map((c) => ({
    model: c.model,
    response: c.content,
    responseTimeMs: c.responseTimeMs,
  }));
  return {
    rows: [
      ...(round.leadingRows?.(answered) ?? []),
      ...answered.map((call): StageRow => ({
        ...callRow(round.stageType, round.stageOrder, 'respondent', call, round.parsedData?.(call) ?? {}),
        ...(round.seated ? { participant: participantOfKey(call.key) } : {}),
      })),
    ],
    events: [modeEvent(round.event, { data })],
    transition: { kind: 'next', stage: round.next },
  };
}

/** A seated round's stored answers (`initial_answer` rows) as its event delivered them, in roster order. */
export const seatedResponses = (rows: readonly StageRow[]): Stage1Response[] =>
  initialAnswers(rows).map(({ model, response, responseTimeMs }) => ({ model, response, responseTimeMs }));

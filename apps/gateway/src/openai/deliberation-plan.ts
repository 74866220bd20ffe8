import { QUESTION_MAX_LENGTH, type ModeName } from '@conclave/contracts';
import { historyMessages, modeFacts } from '@conclave/deliberation';
import type { ChatRequest, ChatTurn } from './chat-request';

/**
 * The most earlier exchanges stored with a new conversation: as many as a worker loads for a
 * follow-up (apps/worker HISTORY_LOAD_LIMIT); of those, council's prompts carry the last ten
 * (historyMessages).
 */
export const HISTORY_STORED = 50;

/** How the conversation's earlier exchanges were used. */
export interface EarlierTurns {
  /** Exchanges (user message + answer) before the question. */
  given: number;
  /** Of those, the ones the panel's prompts carry: council's last ten; none for single-turn modes. */
  passedToPanel: number;
  /** Earlier messages that were not part of an exchange (an answer without a question, an empty one). */
  unpaired: number;
  /** System and developer messages, which are not sent to the panel. */
  systemMessages: number;
}

/** A POST /api/deliberations request, and the earlier turns to store before it. */
export interface DeliberationPlan {
  body: Record<string, unknown>;
  /** Earlier exchanges stored as completed turns of the new conversation (multi-turn modes only). */
  history: ChatTurn[];
  earlierTurns: EarlierTurns;
}

/** Jury's `question` names the content under evaluation; the content itself goes in modeConfig.content. */
export function juryQuestion(content: string): string {
  return content.length <= QUESTION_MAX_LENGTH
    ? content
    : `Evaluate the content (${content.length} characters)`;
}

/**
 * The deliberation a chat request asks for. `mode` is the model's (a preset's own, for a preset);
 * `multiTurn` whether it takes earlier turns (council). The question is the last user message (for
 * jury, the content to evaluate). Earlier exchanges become earlier turns of a new conversation for
 * a multi-turn mode, so the worker loads and truncates them as for any follow-up; single-turn modes
 * deliberate on the question alone.
 */
export function planDeliberation(request: ChatRequest, mode: ModeName, multiTurn: boolean): DeliberationPlan {
  const body: Record<string, unknown> =
    request.choice.kind === 'preset' ? { preset: request.choice.name } : { mode };
  const contentField = modeFacts(mode)?.contentField ?? null;
  if (contentField !== null) {
    body.question = juryQuestion(request.question);
    body.modeConfig = { [contentField]: request.question };
  } else {
    body.question = request.question;
  }
  // Issue 37: an expected answer and its grader, validated by the REST envelope's validator.
  Object.assign(body, request.grading);
  const history = multiTurn ? request.history.slice(-HISTORY_STORED) : [];
  return {
    body,
    history,
    earlierTurns: {
      given: request.history.length,
      passedToPanel: historyMessages(history).length / 2,
      unpaired: request.unpaired,
      systemMessages: request.systemMessages,
    },
  };
}

/**
 * The /v1 parameter a request field of POST /api/deliberations came from: the question (jury's
 * content) from the last user message, the mode, roster and options from the model (a mode's
 * defaults, or a preset).
 */
export const fieldParam =
  (request: Pick<ChatRequest, 'questionIndex'>) =>
  (field: string): string | null => {
    if (field === 'question' || field === 'modeConfig.content')
      return `messages[${request.questionIndex}].content`;
    if (field === 'body' || field === 'Idempotency-Key' || field === 'conversationId') return null;
    // The grading extension fields are the request's own: `expected`, `grader`, `grader.<field>`.
    if (field === 'expected' || field === 'grader' || field.startsWith('grader.')) return field;
    return 'model';
  };

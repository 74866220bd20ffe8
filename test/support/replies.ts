import type { SuccessfulCall } from '@conclave/deliberation';

/**
 * A call a simulated model answered with `content`, as the engine records it (a CallOutcome):
 * the model is the key unless `fields` name one, served as asked, 1 ms, usage unknown (null).
 * `fields` override any of these (model, servedModel, responseTimeMs, tokens, cost, finishReason).
 */
export function simulatedReply(
  key: string,
  content: string,
  fields: Partial<Omit<SuccessfulCall, 'ok' | 'key' | 'content'>> = {},
): SuccessfulCall {
  const model = fields.model ?? key;
  return {
    ok: true,
    key,
    model,
    content,
    servedModel: model,
    responseTimeMs: 1,
    promptTokens: null,
    completionTokens: null,
    costUsd: null,
    simulated: true,
    ...fields,
  };
}

/** `provider/name`, as OpenRouter spells ids (`anthropic/claude-opus-4-6`, `meta-llama/llama-3:free`). */
export const MODEL_ID_PATTERN = /^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:@+\-/]*$/;
export const MODEL_ID_MAX_LENGTH = 200;

export const isModelId = (value: unknown): value is string =>
  typeof value === 'string' && value.length <= MODEL_ID_MAX_LENGTH && MODEL_ID_PATTERN.test(value);

export const QUESTION_MAX_LENGTH = 20_000;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string =>
  typeof value === 'string' && UUID_PATTERN.test(value);

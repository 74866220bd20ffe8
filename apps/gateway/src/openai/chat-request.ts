import { MODE_NAMES, PRESET_MODEL_PREFIX, PRESET_NAME_PATTERN, type ModeName } from '@conclave/contracts';
import { MAX_REQUEST_DEPTH, nestedDeeperThan } from '../deliberations/request-validator';
import { invalidRequest, type OpenAiErrorSpec } from './errors';

/** The prefix of every model id this surface lists. */
export const MODEL_PREFIX = 'conclave/';

/** `conclave/<mode>`: the mode with the operator's default roster and options. */
export const modeModelId = (mode: ModeName): string => `${MODEL_PREFIX}${mode}`;

/** `conclave/preset/<name>`: one of the user's presets. */
export const presetModelId = (name: string): string => `${PRESET_MODEL_PREFIX}${name}`;

export type ModelChoice = { kind: 'mode'; mode: ModeName } | { kind: 'preset'; name: string };

/** What a model id stands for; null when it is not one of ours. */
export function parseModelId(id: string): ModelChoice | null {
  if (id.startsWith(PRESET_MODEL_PREFIX)) {
    const name = id.slice(PRESET_MODEL_PREFIX.length);
    return PRESET_NAME_PATTERN.test(name) ? { kind: 'preset', name } : null;
  }
  const mode = id.startsWith(MODEL_PREFIX) ? id.slice(MODEL_PREFIX.length) : '';
  return (MODE_NAMES as readonly string[]).includes(mode) ? { kind: 'mode', mode: mode as ModeName } : null;
}

/** An earlier exchange of the conversation: a user message and the assistant's answer to it. */
export interface ChatTurn {
  question: string;
  answer: string;
}

export interface ChatRequest {
  /** The model id as sent. */
  model: string;
  choice: ModelChoice;
  /** The last user message's text (with the user messages right before it that no answer followed). */
  question: string;
  /** Where the question is in `messages`: errors about it name `messages[<index>].content`. */
  questionIndex: number;
  /** Earlier exchanges, oldest first. */
  history: ChatTurn[];
  /** Earlier messages that could not be paired into an exchange (an answer without a question, an empty one). */
  unpaired: number;
  /** System and developer messages (not sent to the panel). */
  systemMessages: number;
  stream: boolean;
  includeUsage: boolean;
  /** The extension fields `expected` and `grader` as sent (absent or null: left out), unchecked here. */
  grading: { expected?: unknown; grader?: unknown };
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: OpenAiErrorSpec };

/** More messages than any conversation a client keeps; the body limit bounds their size anyway. */
export const MAX_MESSAGES = 2000;

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;
type Role = (typeof ROLES)[number];

/** Fields a message may carry, per role; the others are refused by name. */
const MESSAGE_FIELDS: Record<'system' | 'developer' | 'user' | 'assistant', readonly string[]> = {
  system: ['role', 'content', 'name'],
  developer: ['role', 'content', 'name'],
  user: ['role', 'content', 'name'],
  assistant: ['role', 'content', 'name', 'refusal', 'tool_calls', 'function_call', 'audio'],
};

type Check = (value: unknown) => boolean;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const absent = (value: unknown): boolean => value === undefined || value === null;
const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const isInteger: Check = (v) => Number.isInteger(v);
const isString: Check = (v) => typeof v === 'string';
const isBoolean: Check = (v) => typeof v === 'boolean';
const isStop: Check = (v) =>
  typeof v === 'string' || (Array.isArray(v) && v.every((s) => typeof s === 'string'));
const isStringMap: Check = (v) => isObject(v) && Object.values(v).every((s) => typeof s === 'string');
const isNumberMap: Check = (v) => isObject(v) && Object.values(v).every((n) => isNumber(n));

/**
 * Sampling and bookkeeping parameters: accepted (type-checked) and ignored. The panel runs with the
 * mode's settings; a sampling setting meant for one model would not carry over to a panel's calls.
 */
export const IGNORED_PARAMETERS: Record<string, { check: Check; expected: string }> = {
  temperature: { check: isNumber, expected: 'a number' },
  top_p: { check: isNumber, expected: 'a number' },
  max_tokens: { check: isInteger, expected: 'an integer' },
  max_completion_tokens: { check: isInteger, expected: 'an integer' },
  stop: { check: isStop, expected: 'a string or an array of strings' },
  seed: { check: isInteger, expected: 'an integer' },
  presence_penalty: { check: isNumber, expected: 'a number' },
  frequency_penalty: { check: isNumber, expected: 'a number' },
  logit_bias: { check: isNumberMap, expected: 'an object of numbers' },
  user: { check: isString, expected: 'a string' },
  safety_identifier: { check: isString, expected: 'a string' },
  prompt_cache_key: { check: isString, expected: 'a string' },
  metadata: { check: isStringMap, expected: 'an object of strings' },
  store: { check: isBoolean, expected: 'a boolean' },
  parallel_tool_calls: { check: isBoolean, expected: 'a boolean' },
  service_tier: { check: isString, expected: 'a string' },
  reasoning_effort: { check: isString, expected: 'a string' },
  verbosity: { check: isString, expected: 'a string' },
};

/**
 * Parameters Conclave cannot honour: refused by name unless they ask for nothing (the values
 * `accepts` lets through: absent, null, or the value that means "as usual").
 */
export const REFUSED_PARAMETERS: Record<string, { accepts: Check; why: string }> = {
  tools: {
    accepts: (v) => Array.isArray(v) && v.length === 0,
    why: 'Conclave does not call tools: a panel of models answers in text',
  },
  tool_choice: {
    accepts: (v) => v === 'none' || v === 'auto',
    why: 'Conclave does not call tools: a panel of models answers in text',
  },
  functions: {
    accepts: (v) => Array.isArray(v) && v.length === 0,
    why: 'Conclave does not call functions: a panel of models answers in text',
  },
  function_call: {
    accepts: (v) => v === 'none' || v === 'auto',
    why: 'Conclave does not call functions: a panel of models answers in text',
  },
  n: { accepts: (v) => v === 1, why: 'n must be 1: a deliberation gives one answer' },
  logprobs: { accepts: (v) => v === false, why: 'Conclave cannot return log probabilities' },
  top_logprobs: { accepts: (v) => v === 0, why: 'Conclave cannot return log probabilities' },
  response_format: {
    accepts: (v) => isObject(v) && v.type === 'text' && Object.keys(v).length === 1,
    why: 'only {"type": "text"} is supported: the panel answers in text',
  },
  audio: { accepts: () => false, why: 'Conclave answers in text only' },
  modalities: {
    accepts: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
    why: 'only ["text"] is supported: Conclave answers in text only',
  },
  prediction: { accepts: () => false, why: 'predicted outputs are not supported' },
  web_search_options: { accepts: () => false, why: 'Conclave does not search the web' },
};

const CORE_PARAMETERS = ['model', 'messages', 'stream', 'stream_options'];

/**
 * Conclave's own extension fields (issue 37): an expected answer and its grader, as
 * POST /api/deliberations takes them. Passed on as they are: the REST validator checks them (a
 * 400 naming `expected` or `grader.<field>`).
 */
export const GRADING_PARAMETERS = ['expected', 'grader'] as const;

const KNOWN_PARAMETERS = new Set([
  ...CORE_PARAMETERS,
  ...GRADING_PARAMETERS,
  ...Object.keys(IGNORED_PARAMETERS),
  ...Object.keys(REFUSED_PARAMETERS),
]);

/** A value quoted in an error message: JSON (control characters escaped), at most 100 characters. */
export const quote = (value: string): string =>
  JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);

/** A UTF-16 surrogate without its partner: PostgreSQL cannot store it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const fail = (error: OpenAiErrorSpec): { ok: false; error: OpenAiErrorSpec } => ({ ok: false, error });

/** `Invalid type for '<field>': expected <expected>`, as OpenAI words it. */
const invalidType = (field: string, expected: string): OpenAiErrorSpec =>
  invalidRequest(`Invalid type for '${field}': expected ${expected}`, field, 'invalid_type');

/** `Missing required parameter: '<field>'`, as OpenAI words it. */
const missingParameter = (field: string): OpenAiErrorSpec =>
  invalidRequest(`Missing required parameter: '${field}'`, field, 'missing_required_parameter');

interface Message {
  role: Role;
  text: string;
}

/** A message's text: a string, or an array of text parts (joined by newlines). */
function textOf(value: unknown, at: string, role: Role): Parsed<string> {
  if (typeof value === 'string') return { ok: true, value };
  if (value === null && role === 'assistant') return { ok: true, value: '' };
  if (!Array.isArray(value)) {
    return fail(invalidType(at, 'a string or an array of text parts'));
  }
  const texts: string[] = [];
  for (let j = 0; j < value.length; j++) {
    const part: unknown = value[j];
    const where = `${at}[${j}]`;
    if (!isObject(part) || typeof part.type !== 'string') {
      return fail(invalidRequest(`'${where}' must be an object with a "type"`, where, 'invalid_type'));
    }
    // A text part's text, or an assistant's refusal part's refusal.
    const field =
      part.type === 'text' ? 'text' : part.type === 'refusal' && role === 'assistant' ? 'refusal' : null;
    if (field === null) {
      return fail(
        invalidRequest(
          `'${where}' is a ${quote(part.type)} part: Conclave takes text only (parts of type "text")`,
          where,
          'unsupported_content',
        ),
      );
    }
    const text = part[field];
    if (typeof text !== 'string') return fail(invalidType(`${where}.${field}`, 'a string'));
    texts.push(text);
  }
  return { ok: true, value: texts.join('\n') };
}

function parseMessage(value: unknown, i: number): Parsed<Message> {
  const at = `messages[${i}]`;
  if (!isObject(value)) return fail(invalidRequest(`'${at}' must be an object`, at, 'invalid_type'));
  const role = value.role as Role;
  if (typeof role !== 'string' || !ROLES.includes(role)) {
    return fail(
      invalidRequest(
        `'${at}.role' must be one of: system, developer, user, assistant`,
        `${at}.role`,
        'invalid_value',
      ),
    );
  }
  if (role === 'tool' || role === 'function') {
    return fail(
      invalidRequest(
        `'${at}' is a ${role} message: Conclave does not call tools, so a conversation cannot hold their results`,
        `${at}.role`,
        'unsupported_value',
      ),
    );
  }
  const allowed = MESSAGE_FIELDS[role as keyof typeof MESSAGE_FIELDS];
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      return fail(
        invalidRequest(
          `Unrecognized field in '${at}': ${quote(key)}`,
          `${at}.${key.slice(0, 100)}`,
          'unknown_parameter',
        ),
      );
    }
  }
  if (value.name !== undefined && typeof value.name !== 'string') {
    return fail(invalidType(`${at}.name`, 'a string'));
  }
  if (role === 'assistant') {
    for (const key of ['tool_calls', 'function_call', 'audio']) {
      const given = value[key];
      if (!absent(given) && !(key === 'tool_calls' && Array.isArray(given) && given.length === 0)) {
        return fail(
          invalidRequest(
            `'${at}.${key}' is not supported: Conclave does not call tools or answer in audio`,
            `${at}.${key}`,
            'unsupported_parameter',
          ),
        );
      }
    }
    if (!absent(value.refusal) && typeof value.refusal !== 'string') {
      return fail(invalidType(`${at}.refusal`, 'a string'));
    }
  }
  if (value.content === undefined && role !== 'assistant') {
    return fail(missingParameter(`${at}.content`));
  }
  const text = textOf(value.content ?? null, `${at}.content`, role);
  if (!text.ok) return text;
  if (text.value.includes('\u0000')) {
    return fail(
      invalidRequest(`'${at}.content' must not contain NUL characters`, `${at}.content`, 'invalid_value'),
    );
  }
  if (LONE_SURROGATE.test(text.value)) {
    return fail(
      invalidRequest(
        `'${at}.content' must be valid Unicode text (it contains an unpaired surrogate)`,
        `${at}.content`,
        'invalid_value',
      ),
    );
  }
  return { ok: true, value: { role, text: text.value } };
}

/**
 * Pairs earlier messages into exchanges: a run of user messages (joined by a blank line) followed by
 * a run of assistant messages. An answer without a question, or an exchange with an empty side, is
 * left out (counted in `unpaired`): a panel's models are not sent empty turns.
 */
export function pairTurns(messages: Message[]): { history: ChatTurn[]; unpaired: number } {
  const history: ChatTurn[] = [];
  let unpaired = 0;
  let questions: string[] = [];
  let answers: string[] = [];
  const close = () => {
    if (answers.length === 0) return;
    const question = questions.join('\n\n').trim();
    const answer = answers.join('\n\n').trim();
    if (question && answer) history.push({ question, answer });
    else unpaired += questions.length + answers.length;
    questions = [];
    answers = [];
  };
  for (const message of messages) {
    if (message.role === 'user') {
      close();
      questions.push(message.text);
    } else if (message.role === 'assistant') {
      answers.push(message.text);
    }
  }
  close();
  unpaired += questions.length;
  return { history, unpaired };
}

function checkParameters(body: Record<string, unknown>): OpenAiErrorSpec | null {
  for (const key of Object.keys(body)) {
    if (!KNOWN_PARAMETERS.has(key)) {
      return invalidRequest(
        `Unrecognized request argument supplied: ${quote(key)}`,
        key.slice(0, 100),
        'unknown_parameter',
      );
    }
  }
  for (const [key, { accepts, why }] of Object.entries(REFUSED_PARAMETERS)) {
    const value = body[key];
    if (absent(value) || accepts(value)) continue;
    return invalidRequest(`'${key}' is not supported: ${why}`, key, 'unsupported_parameter');
  }
  for (const [key, { check, expected }] of Object.entries(IGNORED_PARAMETERS)) {
    const value = body[key];
    if (absent(value) || check(value)) continue;
    return invalidType(key, expected);
  }
  return null;
}

function parseStream(body: Record<string, unknown>): Parsed<{ stream: boolean; includeUsage: boolean }> {
  const { stream, stream_options: options } = body;
  if (!absent(stream) && typeof stream !== 'boolean') {
    return fail(invalidType('stream', 'a boolean'));
  }
  let includeUsage = false;
  if (!absent(options)) {
    if (stream !== true) {
      return fail(
        invalidRequest(
          `'stream_options' is only allowed when 'stream' is true`,
          'stream_options',
          'invalid_value',
        ),
      );
    }
    if (!isObject(options)) {
      return fail(invalidType('stream_options', 'an object'));
    }
    for (const key of Object.keys(options)) {
      if (key !== 'include_usage' && key !== 'include_obfuscation') {
        return fail(
          invalidRequest(
            `Unrecognized field in 'stream_options': ${quote(key)}`,
            `stream_options.${key.slice(0, 100)}`,
            'unknown_parameter',
          ),
        );
      }
      if (!absent(options[key]) && typeof options[key] !== 'boolean') {
        return fail(invalidType(`stream_options.${key}`, 'a boolean'));
      }
    }
    includeUsage = options.include_usage === true;
  }
  return { ok: true, value: { stream: stream === true, includeUsage } };
}

/** The model ids a client may send, in words, for an error message. */
const MODELS_IN_WORDS = `${MODE_NAMES.map(modeModelId).join(', ')} or ${PRESET_MODEL_PREFIX}<name> (GET /v1/models lists them)`;

export const unknownModel = (model: string): OpenAiErrorSpec =>
  invalidRequest(
    `The model ${quote(model)} does not exist or you do not have access to it. Models: ${MODELS_IN_WORDS}`,
    'model',
    'model_not_found',
  );

/**
 * A /v1/chat/completions body, checked whole: OpenAI's parameters (every unknown, unsupported or
 * mistyped one refused by name, as OpenAI does), the model, and the messages, of which the last
 * is the user's question and the earlier ones the conversation so far.
 */
export function parseChatRequest(body: unknown): Parsed<ChatRequest> {
  if (!isObject(body))
    return fail(invalidRequest('The request body must be a JSON object', null, 'invalid_type'));
  if (nestedDeeperThan(body, MAX_REQUEST_DEPTH)) {
    return fail(
      invalidRequest(
        `The request nests objects or arrays more than ${MAX_REQUEST_DEPTH} levels deep`,
        null,
        'invalid_value',
      ),
    );
  }
  const parameters = checkParameters(body);
  if (parameters) return fail(parameters);

  const model = body.model;
  if (absent(model))
    return fail(invalidRequest('You must provide a model parameter', 'model', 'missing_required_parameter'));
  if (typeof model !== 'string') return fail(invalidType('model', 'a string'));
  const choice = parseModelId(model);
  if (!choice) return fail(unknownModel(model));

  const raw = body.messages;
  if (absent(raw)) {
    return fail(missingParameter('messages'));
  }
  if (!Array.isArray(raw)) return fail(invalidType('messages', 'an array'));
  if (raw.length === 0) {
    return fail(
      invalidRequest(
        `'messages' must hold at least one user message: the question`,
        'messages',
        'invalid_value',
      ),
    );
  }
  if (raw.length > MAX_MESSAGES) {
    return fail(
      invalidRequest(
        `'messages' holds ${raw.length} messages; at most ${MAX_MESSAGES} are accepted`,
        'messages',
        'invalid_value',
      ),
    );
  }
  const messages: Message[] = [];
  for (let i = 0; i < raw.length; i++) {
    const parsed = parseMessage(raw[i], i);
    if (!parsed.ok) return parsed;
    messages.push(parsed.value);
  }
  const lastIndex = messages.length - 1;
  if (messages[lastIndex].role !== 'user') {
    return fail(
      invalidRequest(
        `The last message must be a user message: it is the question put to the panel (got ${messages[lastIndex].role})`,
        `messages[${lastIndex}].role`,
        'invalid_value',
      ),
    );
  }
  const dialogue = messages.filter((m) => m.role === 'user' || m.role === 'assistant');
  // User messages that end the conversation with no answer between them are one question.
  let first = dialogue.length - 1;
  while (first > 0 && dialogue[first - 1].role === 'user') first -= 1;
  const question = dialogue
    .slice(first)
    .map((m) => m.text)
    .join('\n\n')
    .trim();
  if (question.length === 0) {
    return fail(
      invalidRequest(
        `'messages[${lastIndex}].content' is empty: the last user message is the question put to the panel`,
        `messages[${lastIndex}].content`,
        'invalid_value',
      ),
    );
  }
  const { history, unpaired } = pairTurns(dialogue.slice(0, first));
  const stream = parseStream(body);
  if (!stream.ok) return stream;
  return {
    ok: true,
    value: {
      model,
      choice,
      question,
      questionIndex: lastIndex,
      history,
      unpaired,
      systemMessages: messages.filter((m) => m.role === 'system' || m.role === 'developer').length,
      ...stream.value,
      grading: Object.fromEntries(
        GRADING_PARAMETERS.flatMap((key) => (absent(body[key]) ? [] : [[key, body[key]]])),
      ),
    },
  };
}

import type {
  DeliberationGrades,
  Degradation,
  DeliberationView,
  ModeName,
  PartialResult,
  Preset,
  Usage,
} from '@conclave/contracts';
import { modeModelId, presetModelId } from './chat-request';
import type { EarlierTurns } from './deliberation-plan';

/** OpenAI's usage object. */
export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What a /v1 answer says about the deliberation behind it (the `conclave` field). */
export interface ConclaveInfo {
  messageId: string;
  conversationId: string;
  mode: ModeName;
  preset: string | null;
  status: DeliberationView['status'];
  /** The deliberation in the web client; null when the request's Host header is not a host name. */
  url: string | null;
  simulated: boolean;
  costUsd: number;
  /** Something is missing: a call failed, was cut or cancelled, an answer could not be read, or the run ended early. */
  partial: boolean;
  failedCalls: { stage: string; model: string; error: string | null }[];
  /** Who was asked and did not answer readably, and why (`summary`: one line); null when nobody. */
  degraded: Degradation | null;
  /** A cancelled or failed run: the answers that finished in the stage it never completed, and what was cut. */
  kept: PartialResult | null;
  earlierTurns: EarlierTurns;
  /**
   * A request with an expected answer (the `expected` / `grader` extension fields): every graded
   * answer's grade as stored with it and the panel's final one's, as GET /api/deliberations/:id
   * gives them; absent for an ungraded request.
   */
  grades?: DeliberationGrades;
}

export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'conclave';
}

/** When the modes' model ids first existed (unix seconds): OpenAI's `created` of a model. */
export const MODES_CREATED = 1_763_780_000;

/** GET /v1/models: one model per available mode, then the user's presets. */
export function modelList(modes: readonly ModeName[], presets: readonly Preset[]) {
  const data: ModelEntry[] = [
    ...modes.map((mode) => ({
      id: modeModelId(mode),
      object: 'model' as const,
      created: MODES_CREATED,
      owned_by: 'conclave' as const,
    })),
    ...presets.map((preset) => ({
      id: presetModelId(preset.name),
      object: 'model' as const,
      created: Math.floor(Date.parse(preset.createdAt) / 1000) || MODES_CREATED,
      owned_by: 'conclave' as const,
    })),
  ];
  return { object: 'list' as const, data };
}

/** `chatcmpl-<messageId>`: the completion's id names the deliberation. */
export const completionId = (messageId: string): string => `chatcmpl-${messageId}`;

/**
 * Every model call the deliberation made, summed (the stored `model_calls` of its message:
 * the conversation title's call included, which the last stage waits for).
 */
export function usageOf(usage: Usage): CompletionUsage {
  const prompt = Math.max(0, Math.round(usage.promptTokens));
  const completion = Math.max(0, Math.round(usage.completionTokens));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export const webLink = (base: string | null, messageId: string): string | null =>
  base === null ? null : `${base}/#/m/${messageId}`;

export function conclaveInfo(
  view: DeliberationView,
  extra: { preset: string | null; base: string | null; earlierTurns: EarlierTurns },
): ConclaveInfo {
  const failedCalls = view.calls
    .filter((call) => !call.ok)
    .map((call) => ({ stage: call.stage, model: call.model, error: call.error }));
  return {
    messageId: view.messageId,
    conversationId: view.conversationId,
    mode: view.mode,
    preset: extra.preset,
    status: view.status,
    url: webLink(extra.base, view.messageId),
    simulated: view.simulated,
    costUsd: view.usage.costUsd,
    partial: failedCalls.length > 0 || view.degraded !== null || view.partial !== null,
    failedCalls,
    degraded: view.degraded,
    kept: view.partial,
    earlierTurns: extra.earlierTurns,
    ...(view.grades ? { grades: view.grades } : {}),
  };
}

const unixSeconds = (iso: string): number => Math.floor((Date.parse(iso) || Date.now()) / 1000);

/**
 * The short note a degraded run's answer ends with (and its reasoning's last line): who did not
 * answer and why, so that the answer never reads as the whole panel's. Null when nobody is missing.
 */
export function degradedNote(view: Pick<DeliberationView, 'degraded'>): string | null {
  return view.degraded ? `Note from Conclave: ${view.degraded.summary}.` : null;
}

/** The final text with the degraded note after it, set apart, when there is one. */
export const withNote = (finalText: string, note: string | null): string =>
  note ? `${finalText}\n\n---\n${note}` : finalText;

/** The answer to a request without `stream`: the mode's final text, the usage, the `conclave` field. */
export function chatCompletion(
  view: DeliberationView,
  model: string,
  finalText: string,
  reasoning: string,
  conclave: ConclaveInfo,
) {
  const note = degradedNote(view);
  return {
    id: completionId(view.messageId),
    object: 'chat.completion' as const,
    created: unixSeconds(view.createdAt),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          content: withNote(finalText, note),
          refusal: null,
          ...(reasoning || note ? { reasoning_content: note ? `${reasoning}${note}\n` : reasoning } : {}),
        },
        logprobs: null,
        finish_reason: 'stop' as const,
      },
    ],
    usage: usageOf(view.usage),
    system_fingerprint: null,
    conclave,
  };
}

/** The parts of a chat.completion.chunk every chunk of a stream repeats. */
export interface ChunkBase {
  id: string;
  created: number;
  model: string;
  /** `stream_options.include_usage`: every chunk carries `usage: null`, the last one the figures. */
  includeUsage: boolean;
}

export type ChunkDelta = { role?: 'assistant'; content?: string; reasoning_content?: string };

/** What every `chat.completion.chunk` of a stream begins with. */
const chunkHead = (base: ChunkBase) => ({
  id: base.id,
  object: 'chat.completion.chunk' as const,
  created: base.created,
  model: base.model,
  system_fingerprint: null,
});

/** One `chat.completion.chunk` with a delta (and, on the last one with a choice, its finish reason). */
export function chunk(
  base: ChunkBase,
  delta: ChunkDelta,
  finish: { reason: 'stop'; conclave: ConclaveInfo } | null = null,
) {
  return {
    ...chunkHead(base),
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish ? finish.reason : null }],
    ...(base.includeUsage ? { usage: null } : {}),
    ...(finish ? { conclave: finish.conclave } : {}),
  };
}

/** The last chunk with `include_usage`: no choices, the usage. */
export function usageChunk(base: ChunkBase, usage: Usage) {
  return {
    ...chunkHead(base),
    choices: [],
    usage: usageOf(usage),
  };
}

/** One Server-Sent Event carrying a JSON object. */
export const sse = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;

export const DONE = 'data: [DONE]\n\n';

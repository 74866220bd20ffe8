import {
  MODEL_SOURCES,
  MODE_NAMES,
  isTerminalStatus,
  roleOfStage,
  type ApiErrorBody,
  type DeliberationAccepted,
  type DeliberationView,
  type DeliveredEvent,
  type ModeDefaults,
  type ModeDescription,
  type ModelsResponse,
} from '@conclave/contracts';
import { modeFacts, type JsonSchemaObject } from '@conclave/deliberation';
import {
  ANONYMOUS_PANELIST,
  anonymousWhy,
  DELIBERATION_OUTCOME_SCHEMA,
  outcomeOf,
  outcomeSummary,
  type DeliberationOutcome,
} from '@conclave/outcomes';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ApiError } from '../common/api-error';
import { STORAGE_UNAVAILABLE } from '../common/error-answer';
import { deliberationRequestSchema, MODE_SUMMARIES } from '../deliberations/request-schema';
import { ProgressTracker, stageLabel, type ProgressUpdate } from './progress';

export const TOOL_NAMES = [
  'deliberate',
  'start_deliberation',
  'get_deliberation',
  'cancel_deliberation',
  'list_modes',
  'list_models',
] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** The transcript resource of a deliberation (resources/read answers it in Markdown). */
export const TRANSCRIPT_URI_TEMPLATE = 'conclave://deliberations/{id}';
export const transcriptUri = (messageId: string): string => `conclave://deliberations/${messageId}`;
/** The web client's page of a deliberation, under the address the caller reached the gateway at. */
export const webLink = (webBase: string, messageId: string): string => `${webBase}/#/m/${messageId}`;

/** The longest `deliberate` or `get_deliberation` may wait for the end in one call. */
export const MAX_WAIT_SECONDS = 600;
/**
 * How long `deliberate` waits for the end unless told otherwise: under the 60 s request timeout of
 * the MCP SDK's client (and of the hosts built on it), so that the call answers before it is cut.
 */
export const DELIBERATE_WAIT_SECONDS = 45;
/** The rule for what stops a run over MCP, as the tools state it. */
export const STOP_RULE =
  'No client of yours stops a deliberation except by cancel_deliberation (or a stop from the web client or the ' +
  'API): a call that times out, is cancelled by its client (notifications/cancelled) or loses its connection ' +
  'only stops waiting, and the deliberation goes on. It can still end without you: a model failure the mode ' +
  'cannot go on without, the time cap, an administrator, or its API key being revoked.';
/** Models named in list_models's text at most (structuredContent has them all). */
const MODELS_IN_TEXT = 100;

/** What the tools need of the gateway: its services, behind a plain interface. */
export interface ToolBackend {
  /**
   * Starts a deliberation as POST /api/deliberations does (its validation, limits, budget,
   * idempotency); `rejoined` when an earlier request with the same idempotency key and body had
   * started it.
   */
  start(
    userId: string,
    body: Record<string, unknown>,
    idempotencyKey?: string,
    /** The caller's API key (none in single-user mode): revoking it cancels the deliberation. */
    keyId?: string | null,
  ): Promise<StartedRun>;
  /** The user's deliberation as stored; a 404 ApiError for another user's or an unknown id. */
  view(userId: string, messageId: string): Promise<DeliberationView>;
  /** Stops it (CancelService); a 409 ApiError when it has already ended. */
  cancel(userId: string, messageId: string): Promise<void>;
  /**
   * Delivers the deliberation's events from the first, in order, then live ones; resolves once it
   * has ended, or when `stop` aborts.
   */
  follow(messageId: string, onEvent: (event: DeliveredEvent) => void, stop: AbortSignal): Promise<void>;
  /** The stage the user's deliberation is at (null once it has ended, or before it has begun). */
  stageOf(userId: string, messageId: string): Promise<string | null>;
  /** The most model calls its mode's plan allows (the title's excepted), or null when unknown. */
  plannedCalls(userId: string, messageId: string): Promise<number | null>;
  modes(): ModeDescription[];
  models(): Promise<ModelsResponse>;
  /** An unexpected error, for the log (the caller is told only that something went wrong). */
  logError(what: string, error: unknown): void;
  /** Says whether an error means the store is unavailable (told to the caller as such). */
  isUnavailable(error: unknown): boolean;
}

export type StartedRun = DeliberationAccepted & { rejoined: boolean };

/** One tools/call. */
export interface CallContext {
  userId: string;
  /** The caller's API key id (null in single-user mode), recorded on what the call starts. */
  keyId?: string | null;
  /** The gateway's address as the caller reached it (scheme://host), for the web link. */
  webBase: string;
  /** Sends a progress notification; null when the client sent no progress token. */
  notify: ((update: ProgressUpdate) => Promise<void>) | null;
  /** How long a run may go without a notification before a heartbeat is sent. */
  progressIntervalMs: number;
  /**
   * Aborts when the call ends for its client: its connection is gone, or it cancelled the call
   * (notifications/cancelled). The call stops waiting; the deliberation goes on (STOP_RULE).
   */
  stop: AbortSignal;
  /** Holds one of the user's live streams while the call waits (a 429 ApiError over the cap); returns its release. */
  holdStream(): () => void;
  now(): number;
}

type Arguments = Record<string, unknown>;
type Handler = (args: Arguments, context: CallContext, backend: ToolBackend) => Promise<CallToolResult>;

interface ToolEntry {
  definition: Tool;
  handler: Handler;
  /** The arguments it takes besides its schema's own checks: unknown ones are named. */
  known: readonly string[];
}

// ——— results ———

const text = (value: string) => ({ type: 'text' as const, text: value });

/** A tool error the calling model can act on: `isError`, the reason in its text. */
export const toolError = (message: string): CallToolResult => ({ isError: true, content: [text(message)] });

/** `Invalid arguments:` then one line per field with its problem. */
export function fieldErrorText(fields: Record<string, string>): string {
  const lines = Object.entries(fields).map(([field, problem]) => `- ${field}: ${problem}`);
  return `Invalid arguments:\n${lines.join('\n')}`;
}

const notYours = (messageId: string) =>
  toolError(
    `no deliberation ${messageId}: none of yours has this id (ids come from deliberate or start_deliberation)`,
  );

/** Any error of a tool, as a tool error: field problems named, API errors' own messages, never internals. */
export function errorResult(error: unknown, backend: ToolBackend, what: string): CallToolResult {
  if (error instanceof ApiError) {
    const body = error.getResponse() as ApiErrorBody;
    if (body.fields && Object.keys(body.fields).length > 0) return toolError(fieldErrorText(body.fields));
    return toolError(body.message);
  }
  if (backend.isUnavailable(error)) {
    return toolError(`${STORAGE_UNAVAILABLE}.`);
  }
  backend.logError(what, error);
  return toolError('Something went wrong on our side; try again.');
}

const isStatus = (error: unknown, status: number) =>
  error instanceof ApiError && error.getStatus() === status;

/** Where a deliberation that has not ended is, in a tool's structuredContent (`running`). */
export interface RunningState {
  /** The stage it is at; null while it waits in the queue. */
  stage: string | null;
  /** How long this call waited for the end. */
  waitedSeconds: number;
  /** The model calls settled so far, per stage in the order the stages began. */
  stages: { stage: string; answered: string[]; failed: { model: string; error: string }[] }[];
  /** The call that fetches the rest. */
  next: { tool: 'get_deliberation'; arguments: { messageId: string; waitSeconds: number } };
}

/**
 * The calls of `view` settled so far, per stage (in the order each stage's first call settled).
 * Delphi's panelists are not named while the exercise runs, as in its progress notifications.
 */
export function settledByStage(view: DeliberationView): RunningState['stages'] {
  // The mode whose panel is anonymous while it runs (ModeFacts), or null.
  const facts = modeFacts(view.mode);
  const hidden = facts?.anonymousWhileRunning && !isTerminalStatus(view.status) ? facts : null;
  const stages = new Map<string, RunningState['stages'][number]>();
  for (const call of view.calls) {
    const stage = stages.get(call.stage) ?? { stage: call.stage, answered: [], failed: [] };
    stages.set(call.stage, stage);
    const anonymous = hidden !== null && roleOfStage(hidden, call.stage) === hidden.panelRole;
    const model = anonymous ? ANONYMOUS_PANELIST : call.model;
    if (call.ok) stage.answered.push(model);
    else
      stage.failed.push({
        model,
        error: anonymous ? anonymousWhy(call.error) : (call.error ?? 'unknown error'),
      });
  }
  return [...stages.values()];
}

/** `2 answered (sim/a, sim/b)`, or `2 answered` when they are anonymous. */
function answeredText(answered: string[]): string {
  const named = answered.filter((model) => model !== ANONYMOUS_PANELIST);
  return named.length === 0
    ? `${answered.length} answered`
    : `${answered.length} answered (${named.join(', ')})`;
}

/** What the result of a call that answers before the end says: where the run is, and how to fetch the rest. */
export function runningText(view: DeliberationView, running: RunningState): string {
  const where =
    running.stage === null
      ? `is still ${view.status}`
      : `is still ${view.status} (${view.mode}, at ${stageLabel(running.stage)})`;
  const lines = [`Deliberation ${view.messageId} ${where} after ${running.waitedSeconds} s; it goes on.`];
  if (running.stages.length === 0) lines.push('No model has answered yet.');
  else {
    lines.push('Done so far:');
    for (const { stage, answered, failed } of running.stages) {
      const parts = [
        ...(answered.length > 0 ? [answeredText(answered)] : []),
        ...(failed.length > 0
          ? [`${failed.length} failed: ${failed.map((f) => `${f.model} (${f.error})`).join(', ')}`]
          : []),
      ];
      lines.push(`- ${stageLabel(stage)}: ${parts.join('; ')}`);
    }
  }
  const { messageId, waitSeconds } = running.next.arguments;
  lines.push(
    `To get the rest, call get_deliberation with messageId "${messageId}" and waitSeconds ${waitSeconds}, ` +
      'again until its status is complete, failed or cancelled. ' +
      STOP_RULE,
  );
  return lines.join('\n');
}

function outcomeResult(
  view: DeliberationView,
  context: CallContext,
  note?: string,
  running?: RunningState,
): CallToolResult & { structuredContent: DeliberationOutcome & { running?: RunningState } } {
  const outcome = outcomeOf(view, {
    web: webLink(context.webBase, view.messageId),
    transcript: transcriptUri(view.messageId),
  });
  const summary = outcomeSummary(outcome);
  const head = [running ? runningText(view, running) : null, note ?? null].filter((t) => t !== null);
  return {
    content: [
      text([...head, summary].join('\n\n')),
      {
        type: 'resource_link',
        uri: transcriptUri(view.messageId),
        name: `deliberation-${view.messageId}.md`,
        title: `Transcript of the ${view.mode} deliberation`,
        description: "Every model's answers, rankings, votes, scores or estimates, in Markdown",
        mimeType: 'text/markdown',
      },
    ],
    structuredContent: running ? { ...outcome, running } : outcome,
  };
}

/**
 * The deliberation as it is now: its outcome when it has ended, else its outcome so far with where
 * it is (`running`) and how to fetch the rest.
 */
async function currentResult(
  messageId: string,
  context: CallContext,
  backend: ToolBackend,
  waitedSince: number,
  nextWaitSeconds: number,
  note?: string,
): Promise<CallToolResult> {
  const view = await backend.view(context.userId, messageId);
  if (isTerminalStatus(view.status)) return outcomeResult(view, context, note);
  const running: RunningState = {
    stage: view.status === 'queued' ? null : await backend.stageOf(context.userId, messageId),
    waitedSeconds: Math.max(0, Math.round((context.now() - waitedSince) / 1000)),
    stages: settledByStage(view),
    next: { tool: 'get_deliberation', arguments: { messageId, waitSeconds: nextWaitSeconds } },
  };
  return outcomeResult(view, context, note, running);
}

// ——— arguments ———

/** Unknown arguments, named; null when there are none. */
function unknownArguments(args: Arguments, known: readonly string[]): Record<string, string> | null {
  const unknown = Object.keys(args).filter((key) => !known.includes(key));
  if (unknown.length === 0) return null;
  return Object.fromEntries(
    unknown.map((key) => [key, `unknown argument (this tool takes: ${known.join(', ') || 'none'})`]),
  );
}

function messageIdOf(args: Arguments): string | Record<string, string> {
  const id = args.messageId;
  if (id === undefined || id === null) return { messageId: 'messageId is required' };
  if (typeof id !== 'string' || id.trim() === '' || id.length > 100)
    return { messageId: 'messageId must be the id a deliberation was started with (a UUID)' };
  return id.trim();
}

/** `waitSeconds`, or `fallback` when it is absent; the field's problem when it is not a valid wait. */
function waitSecondsOf(args: Arguments, fallback: number): number | Record<string, string> {
  const wait = args.waitSeconds ?? fallback;
  if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 0 || wait > MAX_WAIT_SECONDS)
    return { waitSeconds: `waitSeconds must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}` };
  return wait;
}

type RequestArguments =
  | { ok: true; body: Arguments; idempotencyKey?: string; waitSeconds: number }
  | { ok: false; fields: Record<string, string> };

/**
 * `deliberate` / `start_deliberation`: the request, with the idempotency key (and, for deliberate,
 * `waitSeconds`) taken out of it; the request itself is checked by DeliberationsService.start.
 */
function requestOf(args: Arguments, waits: boolean): RequestArguments {
  const { idempotencyKey, ...rest } = args;
  const fields: Record<string, string> = {};
  let body: Arguments = rest;
  let waitSeconds = 0;
  if (waits) {
    const { waitSeconds: _given, ...withoutWait } = rest;
    body = withoutWait;
    const wait = waitSecondsOf(rest, DELIBERATE_WAIT_SECONDS);
    if (typeof wait === 'number') waitSeconds = wait;
    else Object.assign(fields, wait);
  }
  if (
    idempotencyKey !== undefined &&
    (typeof idempotencyKey !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(idempotencyKey))
  )
    fields.idempotencyKey = 'idempotencyKey must be 1 to 255 visible ASCII characters';
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return { ok: true, body, waitSeconds, ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}) };
}

/** Starts (or rejoins) the run; a key used before with other arguments is named as the argument at fault. */
async function startRun(
  request: { body: Arguments; idempotencyKey?: string },
  context: CallContext,
  backend: ToolBackend,
): Promise<StartedRun | CallToolResult> {
  try {
    return await backend.start(context.userId, request.body, request.idempotencyKey, context.keyId);
  } catch (error) {
    if (!isStatus(error, 422)) throw error;
    return toolError(
      fieldErrorText({
        idempotencyKey:
          'this idempotencyKey was already used with other arguments; use a new key for a new deliberation',
      }),
    );
  }
}

const isRefusal = (started: StartedRun | CallToolResult): started is CallToolResult => 'content' in started;

/** What get_deliberation is told to wait next time: what this call waited, or deliberate's default. */
const nextWait = (waitSeconds: number): number => (waitSeconds > 0 ? waitSeconds : DELIBERATE_WAIT_SECONDS);

// ——— waiting for the end ———

/**
 * Follows a deliberation until it ends (or `maxWaitMs` passes, or the call ends for its client), sending a
 * progress notification per stage line and settled call when the client asked for them, and a
 * heartbeat whenever `progressIntervalMs` passes without one.
 */
async function waitForEnd(
  messageId: string,
  context: CallContext,
  backend: ToolBackend,
  opening: string,
  maxWaitMs: number,
): Promise<void> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  context.stop.addEventListener('abort', abort, { once: true });
  if (context.stop.aborted) stop.abort();
  const deadline = setTimeout(abort, maxWaitMs);
  const notify = context.notify;
  let heartbeat: NodeJS.Timeout | null = null;
  let tracker: ProgressTracker | null = null;
  const send = (update: ProgressUpdate | null) => {
    if (!notify || !update || stop.signal.aborted) return;
    notify(update).catch(() => undefined);
    if (heartbeat) clearTimeout(heartbeat);
    heartbeat = setTimeout(() => send(tracker?.heartbeat(context.now()) ?? null), context.progressIntervalMs);
  };
  try {
    if (notify) {
      tracker = new ProgressTracker(
        await backend.plannedCalls(context.userId, messageId).catch(() => null),
        context.now(),
      );
      send(tracker.note(opening));
    }
    await backend.follow(messageId, (event) => send(tracker?.onEvent(event) ?? null), stop.signal);
  } finally {
    stop.abort();
    if (heartbeat) clearTimeout(heartbeat);
    clearTimeout(deadline);
    context.stop.removeEventListener('abort', abort);
  }
}

async function startAndWait(
  args: Arguments,
  context: CallContext,
  backend: ToolBackend,
): Promise<CallToolResult> {
  const request = requestOf(args, true);
  if (!request.ok) return toolError(fieldErrorText(request.fields));
  // Cancelled before anything started: nothing to start (the client never learned of a run).
  if (context.stop.aborted) return toolError('The call was cancelled before it started anything.');
  const release = context.holdStream();
  try {
    const since = context.now();
    const started = await startRun(request, context, backend);
    if (isRefusal(started)) return started;
    const { messageId, rejoined } = started;
    const which = rejoined
      ? `rejoined deliberation ${messageId} (started earlier with this idempotencyKey)`
      : `started deliberation ${messageId}`;
    if (request.waitSeconds > 0)
      await waitForEnd(
        messageId,
        context,
        backend,
        `${which}; this call waits up to ${request.waitSeconds} s for the end, then answers with where it is. ` +
          `If this call is cut off, get_deliberation with this messageId resumes it: ${STOP_RULE}`,
        request.waitSeconds * 1000,
      );
    return await currentResult(messageId, context, backend, since, nextWait(request.waitSeconds));
  } finally {
    release();
  }
}

// ——— the tools ———

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const STARTS_A_RUN = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};

const MESSAGE_ID: JsonSchemaObject = {
  type: 'string',
  minLength: 1,
  maxLength: 100,
  description: 'The messageId deliberate or start_deliberation returned.',
};

const IDEMPOTENCY_KEY: JsonSchemaObject = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7e]+$',
  description:
    'Optional. Calling deliberate or start_deliberation again with the same key and the same arguments ' +
    '(waitSeconds aside) rejoins the deliberation the first call started, running or ended, instead of ' +
    'starting another: a safe retry after a cut-off call. The same key with other arguments is an error.',
};

const WAIT_SECONDS = (fallback: number, what: string): JsonSchemaObject => ({
  type: 'integer',
  minimum: 0,
  maximum: MAX_WAIT_SECONDS,
  default: fallback,
  description:
    `How long this call waits for the end, in seconds (0 to ${MAX_WAIT_SECONDS}; default ${fallback}${what}). ` +
    'If the deliberation has not ended by then, the call answers anyway (not an error) with where it is — ' +
    'status, stage, who answered in which stage — and the deliberation goes on; call get_deliberation with ' +
    'its messageId for the rest. Raise it only if your client waits longer than that for a tool call.',
});

/** An object schema: its `properties`, the `required` ones (and with `closed`, no others). */
const objectOf = (
  properties: Record<string, JsonSchemaObject>,
  required: string[],
  closed = false,
): JsonSchemaObject => ({
  type: 'object',
  properties,
  required,
  ...(closed ? { additionalProperties: false } : {}),
});

/** An array schema of `items`. */
const listOf = (items: JsonSchemaObject): JsonSchemaObject => ({ type: 'array', items });

/**
 * A deliberation's outcome, and while it has not ended `running`: where it is and how to fetch the
 * rest. The outcome's own schema (libs/outcomes) with that one optional property added.
 */
export function outcomeOutputSchema(): JsonSchemaObject {
  const outcome = DELIBERATION_OUTCOME_SCHEMA as JsonSchemaObject;
  const string: JsonSchemaObject = { type: 'string' };
  const strings = listOf(string);
  const running: JsonSchemaObject = {
    type: 'object',
    description:
      'Present only while the deliberation has not ended (status queued or running): where it is, what is ' +
      'done so far, and the call that fetches the rest. It goes on after this call.',
    properties: {
      stage: { anyOf: [string, { type: 'null' }], description: 'The stage it is at (null while queued).' },
      waitedSeconds: { type: 'integer', minimum: 0, description: 'How long this call waited.' },
      stages: {
        type: 'array',
        description: 'The model calls settled so far, per stage.',
        items: objectOf(
          {
            stage: string,
            answered: strings,
            failed: listOf(objectOf({ model: string, error: string }, ['model', 'error'], true)),
          },
          ['stage', 'answered', 'failed'],
          true,
        ),
      },
      next: {
        type: 'object',
        description: 'Call this tool with these arguments to wait for the end and get the result.',
        properties: {
          tool: { type: 'string', enum: ['get_deliberation'] },
          arguments: objectOf(
            { messageId: string, waitSeconds: { type: 'integer', minimum: 0 } },
            ['messageId', 'waitSeconds'],
            true,
          ),
        },
        required: ['tool', 'arguments'],
        additionalProperties: false,
      },
    },
    required: ['stage', 'waitedSeconds', 'stages', 'next'],
    additionalProperties: false,
  };
  return { ...outcome, properties: { ...outcome.properties, running } };
}

/** The shape start_deliberation answers. */
export const STARTED_SCHEMA: JsonSchemaObject = objectOf(
  {
    messageId: {
      type: 'string',
      description: 'The deliberation: pass it to get_deliberation or cancel_deliberation.',
    },
    conversationId: {
      type: 'string',
      description: 'Its conversation (council: continue it with conversationId).',
    },
    mode: { type: 'string', enum: [...MODE_NAMES] },
    status: { type: 'string', enum: ['queued', 'running', 'complete', 'failed', 'cancelled'] },
    transcript: {
      type: 'string',
      description: 'The transcript resource (Markdown), readable once it has ended.',
    },
    web: { type: 'string', description: 'The deliberation in the web client.' },
  },
  ['messageId', 'conversationId', 'mode', 'status', 'transcript', 'web'],
  true,
);

/** The shape list_modes answers: GET /api/modes's content under `modes`. */
export const MODES_SCHEMA: JsonSchemaObject = objectOf(
  {
    modes: listOf(
      objectOf(
        {
          mode: { type: 'string', enum: [...MODE_NAMES] },
          available: { type: 'boolean' },
          multiTurn: { type: 'boolean' },
          roster: listOf(
            objectOf(
              {
                role: { type: 'string' },
                field: { type: 'string' },
                min: { type: 'integer' },
                max: { type: 'integer' },
              },
              ['role', 'field', 'min', 'max'],
            ),
          ),
          defaults: { type: 'object' },
          options: listOf(
            objectOf(
              { field: { type: 'string' }, type: { type: 'string' }, description: { type: 'string' } },
              ['field', 'type', 'description'],
            ),
          ),
        },
        ['mode', 'available', 'multiTurn', 'roster', 'defaults', 'options'],
      ),
    ),
  },
  ['modes'],
);

const NULLABLE_STRING: JsonSchemaObject = { type: ['string', 'null'] };

/** The shape list_models answers: GET /api/models's content (its `models` filtered when asked). */
export const MODELS_SCHEMA: JsonSchemaObject = objectOf(
  {
    models: listOf(
      objectOf(
        {
          id: { type: 'string', description: 'What a roster names.' },
          provider: { type: 'string', enum: [...MODEL_SOURCES] },
          name: { type: 'string' },
          contextLength: { type: 'number' },
          pricing: objectOf(
            { promptPerMillionUsd: { type: 'number' }, completionPerMillionUsd: { type: 'number' } },
            ['promptPerMillionUsd', 'completionPerMillionUsd'],
          ),
          description: { type: 'string' },
        },
        ['id', 'provider', 'name'],
      ),
    ),
    sources: listOf(
      objectOf(
        {
          provider: { type: 'string', enum: [...MODEL_SOURCES] },
          configured: { type: 'boolean' },
          fetchedAt: NULLABLE_STRING,
          count: { type: 'integer' },
          error: NULLABLE_STRING,
          note: { type: 'string' },
        },
        ['provider', 'configured', 'fetchedAt', 'count', 'error'],
      ),
    ),
    directives: listOf(
      objectOf({ syntax: { type: 'string' }, effect: { type: 'string' }, example: { type: 'string' } }, [
        'syntax',
        'effect',
        'example',
      ]),
    ),
    promptKinds: listOf({ type: 'string' }),
  },
  ['models', 'sources', 'directives', 'promptKinds'],
);

const objectSchema = (schema: JsonSchemaObject): Tool['inputSchema'] => ({ ...schema, type: 'object' });

const WHEN_TO_WAIT =
  `deliberate waits up to waitSeconds (default ${DELIBERATE_WAIT_SECONDS}, under the 60 s many clients allow a ` +
  'tool call) for the end, sending progress notifications (per stage and per model, and at least every few ' +
  'seconds) when you pass a progress token. A council of fast models takes tens of seconds; many or slow ' +
  'models, debate and Delphi take minutes. When the run has not ended by then, deliberate answers with where it ' +
  'is and its messageId: call get_deliberation with that messageId and waitSeconds until the status is ' +
  `complete, failed or cancelled. ${STOP_RULE}`;

function toolTable(defaults: ModeDefaults): Record<ToolName, ToolEntry> {
  const requestSchema = deliberationRequestSchema(defaults);
  const requestInput = objectSchema({
    ...requestSchema,
    properties: { ...requestSchema.properties, idempotencyKey: IDEMPOTENCY_KEY },
  });
  const deliberateInput = objectSchema({
    ...requestSchema,
    properties: {
      ...requestSchema.properties,
      idempotencyKey: IDEMPOTENCY_KEY,
      waitSeconds: WAIT_SECONDS(DELIBERATE_WAIT_SECONDS, ', under the 60 s many MCP clients allow a call'),
    },
  });
  const requestFields = [...Object.keys(requestSchema.properties ?? {}), 'idempotencyKey'];
  const byId = (description: string, extra: Record<string, JsonSchemaObject> = {}): Tool['inputSchema'] =>
    objectSchema({
      properties: { messageId: { ...MESSAGE_ID, description }, ...extra },
      required: ['messageId'],
      additionalProperties: false,
    });
  const outcomeSchema = objectSchema(outcomeOutputSchema());
  const modeList = MODE_NAMES.map((mode) => `- ${MODE_SUMMARIES[mode]}`).join('\n');

  return {
    deliberate: {
      known: [...requestFields, 'waitSeconds'],
      definition: {
        name: 'deliberate',
        title: 'Deliberate with a panel of models',
        description:
          'Put a question to a panel of language models that deliberate in one of five modes, wait for the end, ' +
          "and get the mode's final answer (the chairman's synthesis, the winning answer, the foreman's or the " +
          "facilitator's report) with every model's answers, rankings, votes, scores or estimates, usage and cost. " +
          'A partial result says which models failed and whether the mode could still conclude.\n\nModes:\n' +
          `${modeList}\n\n${WHEN_TO_WAIT}\nlist_modes gives each mode's roster rules and defaults; list_models the ` +
          'model ids a roster can name.',
        inputSchema: deliberateInput,
        outputSchema: outcomeSchema,
        annotations: { title: 'Deliberate with a panel of models', ...STARTS_A_RUN },
      },
      handler: startAndWait,
    },
    start_deliberation: {
      known: requestFields,
      definition: {
        name: 'start_deliberation',
        title: 'Start a deliberation (without waiting)',
        description:
          'Start a deliberation (the same arguments as deliberate, without waitSeconds) and return its messageId ' +
          'at once. Then call get_deliberation with the messageId (waitSeconds to wait for the end) until its ' +
          `status is complete, failed or cancelled, or cancel_deliberation to stop it. ${STOP_RULE}`,
        inputSchema: requestInput,
        outputSchema: objectSchema(STARTED_SCHEMA),
        annotations: { title: 'Start a deliberation', ...STARTS_A_RUN },
      },
      handler: async (args, context, backend) => {
        const request = requestOf(args, false);
        if (!request.ok) return toolError(fieldErrorText(request.fields));
        const run = await startRun(request, context, backend);
        if (isRefusal(run)) return run;
        const { messageId, conversationId, rejoined } = run;
        const view = await backend.view(context.userId, messageId);
        const started = {
          messageId,
          conversationId,
          mode: view.mode,
          status: view.status,
          transcript: transcriptUri(messageId),
          web: webLink(context.webBase, messageId),
        };
        const what = rejoined
          ? `An earlier call with this idempotencyKey started this ${view.mode} deliberation`
          : `Started a ${view.mode} deliberation`;
        return {
          content: [
            text(
              `${what}: messageId ${messageId} (status ${view.status}). Call get_deliberation with this messageId ` +
                `(waitSeconds ${DELIBERATE_WAIT_SECONDS} to wait for the end) to get its result. ${STOP_RULE}`,
            ),
          ],
          structuredContent: started,
        };
      },
    },
    get_deliberation: {
      known: ['messageId', 'waitSeconds'],
      definition: {
        name: 'get_deliberation',
        title: 'Get a deliberation',
        description:
          "A deliberation's status and result so far (partial while it runs), by the messageId deliberate or " +
          'start_deliberation returned. With waitSeconds it first waits up to that long for the end, sending ' +
          'progress notifications meanwhile; while it has not ended the result says where it is (running). Call it ' +
          `again until the status is complete, failed or cancelled. ${STOP_RULE}`,
        inputSchema: byId('The messageId of one of your deliberations.', {
          waitSeconds: WAIT_SECONDS(0, ': answer at once'),
        }),
        outputSchema: outcomeSchema,
        annotations: { title: 'Get a deliberation', ...READ_ONLY },
      },
      handler: async (args, context, backend) => {
        const id = messageIdOf(args);
        if (typeof id !== 'string') return toolError(fieldErrorText(id));
        const wait = waitSecondsOf(args, 0);
        if (typeof wait !== 'number') return toolError(fieldErrorText(wait));
        const since = context.now();
        let view: DeliberationView;
        try {
          view = await backend.view(context.userId, id);
        } catch (error) {
          if (isStatus(error, 404)) return notYours(id);
          throw error;
        }
        if (wait > 0 && !isTerminalStatus(view.status)) {
          const release = context.holdStream();
          try {
            await waitForEnd(
              id,
              context,
              backend,
              `waiting up to ${wait} s for deliberation ${id} (status ${view.status}). ${STOP_RULE}`,
              wait * 1000,
            );
          } finally {
            release();
          }
        }
        return currentResult(id, context, backend, since, nextWait(wait));
      },
    },
    cancel_deliberation: {
      known: ['messageId'],
      definition: {
        name: 'cancel_deliberation',
        title: 'Cancel a deliberation',
        description:
          'Stop a running deliberation: its model calls in flight are aborted and no further stage runs. What it ' +
          'produced so far stays and is returned (status cancelled). Cancelling one that has already ended changes ' +
          'nothing and returns it as it ended.',
        inputSchema: byId('The messageId of one of your running deliberations.'),
        outputSchema: outcomeSchema,
        annotations: {
          title: 'Cancel a deliberation',
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
      handler: async (args, context, backend) => {
        const id = messageIdOf(args);
        if (typeof id !== 'string') return toolError(fieldErrorText(id));
        let note: string | undefined;
        try {
          await backend.cancel(context.userId, id);
        } catch (error) {
          if (isStatus(error, 404)) return notYours(id);
          if (!isStatus(error, 409)) throw error;
          note = 'It had already ended: nothing was cancelled.';
        }
        return outcomeResult(await backend.view(context.userId, id), context, note);
      },
    },
    list_modes: {
      known: [],
      definition: {
        name: 'list_modes',
        title: 'List the deliberation modes',
        description:
          "The five deliberation modes with each one's roster rules (roles, how many models), options and the " +
          'defaults a request that names none gets (GET /api/modes).',
        inputSchema: objectSchema({ properties: {}, additionalProperties: false }),
        outputSchema: objectSchema(MODES_SCHEMA),
        annotations: { title: 'List the deliberation modes', ...READ_ONLY },
      },
      handler: (_args, _context, backend) => {
        const modes = backend.modes();
        return Promise.resolve({ content: [text(modesText(modes))], structuredContent: { modes } });
      },
    },
    list_models: {
      known: ['search', 'provider'],
      definition: {
        name: 'list_models',
        title: 'List the models',
        description:
          'The model ids a roster can name, from every configured source (the simulated panel always; OpenRouter or ' +
          'an OpenAI-compatible server when configured), with context lengths and prices where known, and the ' +
          'directives simulated ids take (GET /api/models). search narrows a long catalogue.',
        inputSchema: objectSchema({
          properties: {
            search: {
              type: 'string',
              maxLength: 200,
              description: 'Only models whose id or name contains this text (case-insensitive).',
            },
            provider: {
              type: 'string',
              enum: [...MODEL_SOURCES],
              description: 'Only models of this source.',
            },
          },
          additionalProperties: false,
        }),
        outputSchema: objectSchema(MODELS_SCHEMA),
        annotations: { title: 'List the models', ...READ_ONLY },
      },
      handler: async (args, _context, backend) => {
        const fields: Record<string, string> = {};
        if (args.search !== undefined && (typeof args.search !== 'string' || args.search.length > 200))
          fields.search = 'search must be a text of at most 200 characters';
        if (args.provider !== undefined && !(MODEL_SOURCES as readonly unknown[]).includes(args.provider))
          fields.provider = `provider must be one of ${MODEL_SOURCES.join(', ')}`;
        if (Object.keys(fields).length > 0) return toolError(fieldErrorText(fields));
        const all = await backend.models();
        const search = typeof args.search === 'string' ? args.search.trim().toLowerCase() : '';
        const models = all.models.filter(
          (m) =>
            (args.provider === undefined || m.provider === args.provider) &&
            (search === '' || m.id.toLowerCase().includes(search) || m.name.toLowerCase().includes(search)),
        );
        const listed = { ...all, models };
        return { content: [text(modelsText(listed, all.models.length))], structuredContent: listed };
      },
    },
  };
}

function modesText(modes: ModeDescription[]): string {
  return modes
    .map((m) => {
      if (!m.available) return `${m.mode}: not available in this version`;
      const roster = m.roster
        .map((r) => `${r.role} (${r.field}: ${r.min === r.max ? r.min : `${r.min}-${r.max}`})`)
        .join(', ');
      const defaults = Object.entries(m.defaults)
        .map(([field, value]) => `${field}=${JSON.stringify(value)}`)
        .join(', ');
      return `${MODE_SUMMARIES[m.mode]}\n  roster: ${roster}\n  defaults: ${defaults}${m.multiTurn ? '\n  multi-turn' : ''}`;
    })
    .join('\n');
}

function modelsText(listed: ModelsResponse, of: number): string {
  const ids = listed.models.slice(0, MODELS_IN_TEXT).map((m) => m.id);
  const more = listed.models.length > ids.length ? ` … and ${listed.models.length - ids.length} more` : '';
  const directives = listed.directives.map((d) => `${d.syntax}: ${d.effect}`).join('\n  ');
  return (
    `${listed.models.length} of ${of} models: ${ids.join(', ')}${more}` +
    (directives ? `\nSimulated ids (sim/<name>) take directives:\n  ${directives}` : '')
  );
}

/** The tools by name: their definitions (tools/list) and what a tools/call runs. */
export class ToolTable {
  private readonly entries: Record<ToolName, ToolEntry>;

  constructor(defaults: ModeDefaults) {
    this.entries = toolTable(defaults);
  }

  get definitions(): Tool[] {
    return TOOL_NAMES.map((name) => this.entries[name].definition);
  }

  has(name: string): name is ToolName {
    return (TOOL_NAMES as readonly string[]).includes(name);
  }

  /**
   * Runs a tool. Never throws: bad arguments and every failure come back as a tool error
   * (`isError`) whose text names each field and its problem, or says what went wrong.
   */
  async call(
    name: ToolName,
    args: unknown,
    context: CallContext,
    backend: ToolBackend,
  ): Promise<CallToolResult> {
    const entry = this.entries[name];
    const given = args ?? {};
    if (typeof given !== 'object' || Array.isArray(given))
      return toolError('Invalid arguments: expected an object');
    // A `__proto__` key became the object's prototype when the protocol layer copied the arguments:
    // its fields would be read through it. Named like any other unknown field.
    if (Object.getPrototypeOf(given) !== Object.prototype && Object.getPrototypeOf(given) !== null)
      return toolError(fieldErrorText({ ['__proto__']: 'property __proto__ should not exist' }));
    const unknown =
      name === 'deliberate' || name === 'start_deliberation'
        ? null
        : unknownArguments(given as Arguments, entry.known);
    if (unknown) return toolError(fieldErrorText(unknown));
    try {
      return await entry.handler(given as Arguments, context, backend);
    } catch (error) {
      return errorResult(error, backend, name);
    }
  }
}

import {
  MODEL_SOURCES,
  MODE_NAMES,
  isTerminalStatus,
  type ApiErrorBody,
  type DeliberationAccepted,
  type DeliberationView,
  type DeliveredEvent,
  type ModeDefaults,
  type ModeDescription,
  type ModelsResponse,
} from '@conclave/contracts';
import type { JsonSchemaObject } from '@conclave/deliberation';
import {
  DELIBERATION_OUTCOME_SCHEMA,
  outcomeOf,
  outcomeSummary,
  type DeliberationOutcome,
} from '@conclave/outcomes';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ApiError } from '../common/api-error';
import { deliberationRequestSchema, MODE_SUMMARIES } from '../deliberations/request-schema';
import { ProgressTracker, type ProgressUpdate } from './progress';

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

/** The longest `get_deliberation` may wait for the end in one call. */
export const MAX_WAIT_SECONDS = 600;
/** Models named in list_models's text at most (structuredContent has them all). */
const MODELS_IN_TEXT = 100;

/** What the tools need of the gateway: its services, behind a plain interface. */
export interface ToolBackend {
  /** Starts a deliberation as POST /api/deliberations does (its validation, limits, budget, idempotency). */
  start(
    userId: string,
    body: Record<string, unknown>,
    idempotencyKey?: string,
    /** The caller's API key (none in single-user mode): revoking it cancels the deliberation. */
    keyId?: string | null,
  ): Promise<DeliberationAccepted>;
  /** The user's deliberation as stored; a 404 ApiError for another user's or an unknown id. */
  view(userId: string, messageId: string): Promise<DeliberationView>;
  /** Stops it (CancelService); a 409 ApiError when it has already ended. */
  cancel(userId: string, messageId: string): Promise<void>;
  /**
   * Delivers the deliberation's events from the first, in order, then live ones; resolves once it
   * has ended, or when `stop` aborts.
   */
  follow(messageId: string, onEvent: (event: DeliveredEvent) => void, stop: AbortSignal): Promise<void>;
  /** The most model calls its mode's plan allows (the title's excepted), or null when unknown. */
  plannedCalls(userId: string, messageId: string): Promise<number | null>;
  modes(): ModeDescription[];
  models(): Promise<ModelsResponse>;
  /** An unexpected error, for the log (the caller is told only that something went wrong). */
  logError(what: string, error: unknown): void;
  /** Says whether an error means the store is unavailable (told to the caller as such). */
  isUnavailable(error: unknown): boolean;
}

/** Where a call records the deliberation it started, so that the client can cancel it (McpCancellations). */
export interface RunRecord {
  cancelledEarly(): Promise<boolean>;
  claim(messageId: string): Promise<'claimed' | 'cancelled'>;
  release(): Promise<void>;
}

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
  /** Aborts when the call's connection is gone: stop waiting, leave the deliberation running. */
  stop: AbortSignal;
  run: RunRecord;
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
    return toolError('Storage is unavailable right now; try again in a few seconds.');
  }
  backend.logError(what, error);
  return toolError('Something went wrong on our side; try again.');
}

const isStatus = (error: unknown, status: number) =>
  error instanceof ApiError && error.getStatus() === status;

function outcomeResult(
  view: DeliberationView,
  context: CallContext,
  note?: string,
): CallToolResult & { structuredContent: DeliberationOutcome } {
  const outcome = outcomeOf(view, {
    web: webLink(context.webBase, view.messageId),
    transcript: transcriptUri(view.messageId),
  });
  const summary = outcomeSummary(outcome);
  return {
    content: [
      text(note ? `${note}\n\n${summary}` : summary),
      {
        type: 'resource_link',
        uri: transcriptUri(view.messageId),
        name: `deliberation-${view.messageId}.md`,
        title: `Transcript of the ${view.mode} deliberation`,
        description: "Every model's answers, rankings, votes, scores or estimates, in Markdown",
        mimeType: 'text/markdown',
      },
    ],
    structuredContent: outcome,
  };
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

/** `deliberate` / `start_deliberation`: the request, and the idempotency key taken out of it. */
function requestOf(
  args: Arguments,
): { ok: true; body: Arguments; idempotencyKey?: string } | { ok: false; fields: Record<string, string> } {
  const { idempotencyKey, ...body } = args;
  if (idempotencyKey === undefined) return { ok: true, body };
  if (typeof idempotencyKey !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(idempotencyKey))
    return {
      ok: false,
      fields: { idempotencyKey: 'idempotencyKey must be 1 to 255 visible ASCII characters' },
    };
  return { ok: true, body, idempotencyKey };
}

// ——— waiting for the end ———

/**
 * Follows a deliberation until it ends (or `maxWaitMs` passes, or the connection goes), sending a
 * progress notification per stage line and settled call when the client asked for them, and a
 * heartbeat whenever `progressIntervalMs` passes without one.
 */
async function waitForEnd(
  messageId: string,
  context: CallContext,
  backend: ToolBackend,
  opening: string,
  maxWaitMs?: number,
): Promise<void> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  context.stop.addEventListener('abort', abort, { once: true });
  if (context.stop.aborted) stop.abort();
  const deadline = maxWaitMs === undefined ? null : setTimeout(abort, maxWaitMs);
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
    if (deadline) clearTimeout(deadline);
    context.stop.removeEventListener('abort', abort);
  }
}

async function startAndWait(
  args: Arguments,
  context: CallContext,
  backend: ToolBackend,
): Promise<CallToolResult> {
  const request = requestOf(args);
  if (!request.ok) return toolError(fieldErrorText(request.fields));
  if (await context.run.cancelledEarly())
    return toolError('The call was cancelled before it started anything.');
  let release: (() => void) | null = null;
  try {
    release = context.holdStream();
    const accepted = await backend.start(context.userId, request.body, request.idempotencyKey, context.keyId);
    const { messageId } = accepted;
    if ((await context.run.claim(messageId)) === 'cancelled') {
      await backend.cancel(context.userId, messageId).catch(() => undefined);
    }
    await waitForEnd(
      messageId,
      context,
      backend,
      `started deliberation ${messageId} (${transcriptUri(messageId)}); if this call is cut off, get_deliberation resumes it`,
    );
    return outcomeResult(await backend.view(context.userId, messageId), context);
  } finally {
    release?.();
    await context.run.release().catch(() => undefined);
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
    'Optional. Calling again with the same key and the same arguments answers the deliberation the first call ' +
    'started instead of starting another (to retry safely after a cut-off call).',
};

/** The shape start_deliberation answers. */
export const STARTED_SCHEMA: JsonSchemaObject = {
  type: 'object',
  properties: {
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
  required: ['messageId', 'conversationId', 'mode', 'status', 'transcript', 'web'],
  additionalProperties: false,
};

/** The shape list_modes answers: GET /api/modes's content under `modes`. */
export const MODES_SCHEMA: JsonSchemaObject = {
  type: 'object',
  properties: {
    modes: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          mode: { type: 'string', enum: [...MODE_NAMES] },
          available: { type: 'boolean' },
          multiTurn: { type: 'boolean' },
          roster: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                role: { type: 'string' },
                field: { type: 'string' },
                min: { type: 'integer' },
                max: { type: 'integer' },
              },
              required: ['role', 'field', 'min', 'max'],
            },
          },
          defaults: { type: 'object' },
          options: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                field: { type: 'string' },
                type: { type: 'string' },
                description: { type: 'string' },
              },
              required: ['field', 'type', 'description'],
            },
          },
        },
        required: ['mode', 'available', 'multiTurn', 'roster', 'defaults', 'options'],
      },
    },
  },
  required: ['modes'],
};

const NULLABLE_STRING: JsonSchemaObject = { type: ['string', 'null'] };

/** The shape list_models answers: GET /api/models's content (its `models` filtered when asked). */
export const MODELS_SCHEMA: JsonSchemaObject = {
  type: 'object',
  properties: {
    models: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'What a roster names.' },
          provider: { type: 'string', enum: [...MODEL_SOURCES] },
          name: { type: 'string' },
          contextLength: { type: 'number' },
          pricing: {
            type: 'object',
            properties: {
              promptPerMillionUsd: { type: 'number' },
              completionPerMillionUsd: { type: 'number' },
            },
            required: ['promptPerMillionUsd', 'completionPerMillionUsd'],
          },
          description: { type: 'string' },
        },
        required: ['id', 'provider', 'name'],
      },
    },
    sources: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          provider: { type: 'string', enum: [...MODEL_SOURCES] },
          configured: { type: 'boolean' },
          fetchedAt: NULLABLE_STRING,
          count: { type: 'integer' },
          error: NULLABLE_STRING,
          note: { type: 'string' },
        },
        required: ['provider', 'configured', 'fetchedAt', 'count', 'error'],
      },
    },
    directives: {
      type: 'array',
      items: {
        type: 'object',
        properties: { syntax: { type: 'string' }, effect: { type: 'string' }, example: { type: 'string' } },
        required: ['syntax', 'effect', 'example'],
      },
    },
    promptKinds: { type: 'array', items: { type: 'string' } },
  },
  required: ['models', 'sources', 'directives', 'promptKinds'],
};

const objectSchema = (schema: JsonSchemaObject): Tool['inputSchema'] => ({ ...schema, type: 'object' });

const WHEN_TO_WAIT =
  'deliberate waits for the end, sending progress notifications (per stage and per model, and at least every ' +
  'few seconds) when you pass a progress token: clients that reset their timeout on progress never cut it off. ' +
  'A council of fast models takes tens of seconds; many or slow models, debate and Delphi take minutes. If your ' +
  'client cuts tool calls off after a fixed time whatever the progress, use start_deliberation and then ' +
  'get_deliberation (with waitSeconds) instead.';

function toolTable(defaults: ModeDefaults): Record<ToolName, ToolEntry> {
  const requestSchema = deliberationRequestSchema(defaults);
  const requestInput = objectSchema({
    ...requestSchema,
    properties: { ...requestSchema.properties, idempotencyKey: IDEMPOTENCY_KEY },
  });
  const requestFields = [...Object.keys(requestSchema.properties ?? {}), 'idempotencyKey'];
  const byId = (description: string, extra: Record<string, JsonSchemaObject> = {}): Tool['inputSchema'] =>
    objectSchema({
      properties: { messageId: { ...MESSAGE_ID, description }, ...extra },
      required: ['messageId'],
      additionalProperties: false,
    });
  const outcomeSchema = objectSchema(DELIBERATION_OUTCOME_SCHEMA as JsonSchemaObject);
  const modeList = MODE_NAMES.map((mode) => `- ${MODE_SUMMARIES[mode]}`).join('\n');

  return {
    deliberate: {
      known: requestFields,
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
        inputSchema: requestInput,
        outputSchema: outcomeSchema,
        annotations: { title: 'Deliberate with a panel of models', ...STARTS_A_RUN },
      },
      handler: startAndWait,
    },
    start_deliberation: {
      known: requestFields,
      definition: {
        name: 'start_deliberation',
        title: 'Start a deliberation (for long runs)',
        description:
          'Start a deliberation (the same arguments as deliberate) and return its messageId at once, without ' +
          'waiting. Use it for runs longer than your client waits for a tool call; then call get_deliberation with ' +
          'the messageId (waitSeconds to wait for the end) until its status is complete, failed or cancelled, or ' +
          'cancel_deliberation to stop it.',
        inputSchema: requestInput,
        outputSchema: objectSchema(STARTED_SCHEMA),
        annotations: { title: 'Start a deliberation', ...STARTS_A_RUN },
      },
      handler: async (args, context, backend) => {
        const request = requestOf(args);
        if (!request.ok) return toolError(fieldErrorText(request.fields));
        const { messageId, conversationId } = await backend.start(
          context.userId,
          request.body,
          request.idempotencyKey,
          context.keyId,
        );
        const view = await backend.view(context.userId, messageId);
        const started = {
          messageId,
          conversationId,
          mode: view.mode,
          status: view.status,
          transcript: transcriptUri(messageId),
          web: webLink(context.webBase, messageId),
        };
        return {
          content: [
            text(
              `Started a ${view.mode} deliberation: messageId ${messageId} (status ${view.status}). ` +
                'Call get_deliberation with this messageId (waitSeconds to wait for the end) to get its result.',
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
          'progress notifications meanwhile: call it again until the status is complete, failed or cancelled.',
        inputSchema: byId('The messageId of one of your deliberations.', {
          waitSeconds: {
            type: 'integer',
            minimum: 0,
            maximum: MAX_WAIT_SECONDS,
            default: 0,
            description: `Wait up to this many seconds (at most ${MAX_WAIT_SECONDS}) for it to end before answering.`,
          },
        }),
        outputSchema: outcomeSchema,
        annotations: { title: 'Get a deliberation', ...READ_ONLY },
      },
      handler: async (args, context, backend) => {
        const id = messageIdOf(args);
        if (typeof id !== 'string') return toolError(fieldErrorText(id));
        const wait = args.waitSeconds ?? 0;
        if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 0 || wait > MAX_WAIT_SECONDS)
          return toolError(
            fieldErrorText({
              waitSeconds: `waitSeconds must be a whole number from 0 to ${MAX_WAIT_SECONDS}`,
            }),
          );
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
              `waiting for deliberation ${id} (status ${view.status})`,
              wait * 1000,
            );
          } finally {
            release();
          }
          view = await backend.view(context.userId, id);
        }
        return outcomeResult(view, context);
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

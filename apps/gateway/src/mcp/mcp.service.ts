import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import type { DeliberationView, DeliveredEvent, ModeDescription, ModelsResponse } from '@conclave/contracts';
import { modeDefinition, planDeliberation } from '@conclave/deliberation';
import { transcriptMarkdown } from '@conclave/outcomes';
import { IdempotencyRepository, isStoreUnavailable, type RecentDeliberation } from '@conclave/persistence';
import { CONFIG, REDIS_PRODUCER } from '@conclave/platform';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  isJSONRPCRequest,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type ListResourcesResult,
  type ReadResourceResult,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import type { RedisClient } from '@conclave/redis';
import * as z from 'zod/v4';
import { AuthService } from '../auth/auth.service';
import { ApiError, RETRY_AFTER_SECONDS } from '../common/api-error';
import { STORAGE_UNAVAILABLE } from '../common/error-answer';
import { RateLimiter } from '../common/rate-limiter';
import { idempotencyContext, type IdempotencyContext } from '../common/idempotency';
import { PublicUrl } from '../common/public-url';
import { CancelService } from '../deliberations/cancel.service';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { EventHub } from '../events/event-hub';
import { StreamRegistry } from '../events/stream-registry';
import { ModelsService } from '../models/models.service';
import { ModesController } from '../modes/modes.controller';
import { McpCancellations } from './cancellations';
import { batchRefusal, isInitialize, paramsProblem } from './envelope';
import { issueSessionId, sessionIdValid } from './sessions';
import {
  DELIBERATE_WAIT_SECONDS,
  STOP_RULE,
  ToolTable,
  TRANSCRIPT_URI_TEMPLATE,
  transcriptUri,
  type StartedRun,
  type ToolBackend,
  type ToolName,
} from './tools';

/** The MCP error code for a resource that does not exist (the specification's, not in the SDK's enum). */
export const RESOURCE_NOT_FOUND = -32002;

const SERVER_INFO = { name: 'conclave', title: 'Conclave', version: '0.1.0' };

const INSTRUCTIONS =
  'Conclave puts a question to a panel of language models that deliberate (council, vote, jury, debate, ' +
  `delphi). Call deliberate to run one: it waits up to waitSeconds (default ${DELIBERATE_WAIT_SECONDS}) for the result, and when the ` +
  "run takes longer it answers with the run's state and messageId; then call get_deliberation with that " +
  'messageId and waitSeconds until the status is complete, failed or cancelled (start_deliberation starts one ' +
  `without waiting). ${STOP_RULE} Each result links its full transcript as the resource ` +
  'conclave://deliberations/{id}.';

/** How often a waiting call looks for its client's cancellation (sent to any replica). */
const CANCELLATION_CHECK_MS = 1000;
/** The tools whose calls wait, and so end when their client cancels them. */
const WAITING_TOOLS: readonly ToolName[] = ['deliberate', 'get_deliberation'];

/** Who sent one POST /mcp, and where it came from. */
export interface McpCaller {
  userId: string;
  /** The API key's id (null in single-user mode): revoking it ends the caller's waiting calls. */
  keyId: string | null;
  /** The `Mcp-Session-Id` the client sends back (handed out at `initialize`, verified), if any. */
  sessionId: string | undefined;
  /** Where links point: PUBLIC_URL, or the listening address (never the request's Host). */
  webBase: string;
}

const TRANSCRIPT_URI = /^conclave:\/\/deliberations\/([^/?#]{1,100})$/;
/** How many of a caller's deliberations resources/list names (the newest; older ones are read by their URI). */
const RECENT_LISTED = 50;

/**
 * tools/call as the method alone: the Server then checks the params itself and answers malformed
 * ones (arguments that are not an object, no tool name) with InvalidParams (-32602), where the
 * protocol's own schema would fail them as an internal error (-32603).
 */
const CallToolMethod = z.object({ method: z.literal('tools/call'), params: z.unknown() });

/** The Streamable HTTP transport's error code for a session the server does not know (with HTTP 404). */
const SESSION_NOT_FOUND = -32001;

/** A JSON-RPC error that answers a whole POST (no request id to answer it under). */
function refuse(response: Response, status: number, code: number, message: string): void {
  response.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/**
 * The MCP server at /mcp (Streamable HTTP, stateless): each POST gets a new SDK `Server` and
 * transport, so any gateway replica answers any request; progress notifications of a tools/call go
 * out on that POST's own SSE response. The tools themselves are the plain ToolTable; this class
 * gives them the gateway's services.
 */
@Injectable()
export class McpService implements ToolBackend {
  private readonly logger = new Logger('mcp');
  private readonly table: ToolTable;
  private readonly cancellations: McpCancellations;
  private readonly modesController: ModesController;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly deliberations: DeliberationsService,
    private readonly cancels: CancelService,
    private readonly hub: EventHub,
    private readonly catalogue: ModelsService,
    private readonly streams: StreamRegistry,
    private readonly idempotencyKeys: IdempotencyRepository,
    private readonly limiter: RateLimiter,
    @Inject(REDIS_PRODUCER) redis: RedisClient,
    private readonly publicUrl: PublicUrl,
  ) {
    this.table = new ToolTable(config.defaults);
    this.cancellations = new McpCancellations(redis, config.redisPrefix);
    this.modesController = new ModesController(config);
  }

  /**
   * Answers one POST /mcp (the app's JSON parser has read its body; the guards have authenticated
   * it and counted it as one request). Before the SDK sees it: a session id that this user's key
   * was not given is refused (404), a JSON-RPC batch is refused or bounded and each further message
   * counted as a request of its own (429 with Retry-After over the limit), and each request's
   * params are checked against the protocol (-32602 naming the field).
   */
  async handle(userId: string, keyId: string | null, request: Request, response: Response): Promise<void> {
    const body: unknown = request.body;
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    const apiKey = AuthService.bearer(request.headers.authorization);
    const initializing = messages.some(isInitialize);
    const presented = request.headers['mcp-session-id'];
    let sessionId: string | undefined;
    if (!initializing && presented !== undefined) {
      if (typeof presented !== 'string' || !sessionIdValid(presented, userId, apiKey)) {
        return refuse(
          response,
          404,
          SESSION_NOT_FOUND,
          'Session not found: this Mcp-Session-Id was not issued to this API key; send initialize without one to start a new session',
        );
      }
      sessionId = presented;
    }
    if (Array.isArray(body)) {
      const header = request.headers['mcp-protocol-version'];
      const refusal = batchRefusal(body, typeof header === 'string' ? header : undefined);
      if (refusal) return refuse(response, 400, ErrorCode.InvalidRequest, refusal);
      const limit = this.config.abuse.requestsPerMinute;
      if (limit > 0 && body.length > limit) {
        return refuse(
          response,
          400,
          ErrorCode.InvalidRequest,
          `Invalid Request: a batch of ${body.length} messages counts ${body.length} requests, more than the ` +
            `${limit} a minute RATE_LIMIT_REQUESTS_PER_MINUTE allows; send fewer at a time`,
        );
      }
      // The guard counted the POST as one request; each further message is one more.
      await this.limiter.take(userId, 'requests', body.length - 1);
    }
    const caller: McpCaller = { userId, keyId, sessionId, webBase: this.publicUrl.base() };
    const server = this.serverFor(caller, response);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // The connection gone (or the answer sent): the server aborts what still runs for it.
    response.on('close', () => {
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    // Params the protocol's schema refuses answer Invalid Params naming the field; left to the
    // SDK, they would be an Internal Error carrying the validator's dump.
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const problem = isJSONRPCRequest(message) ? paramsProblem(message) : null;
      if (problem === null || !isJSONRPCRequest(message)) return deliver?.(message, extra);
      void transport
        .send({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: problem } })
        .catch((error: unknown) => this.logger.debug(`mcp: ${String(error)}`));
    };
    if (initializing && messages.every((message) => paramsProblem(message) === null)) {
      // Stateless: the id is signed, not stored; the client sends it back on every request, and
      // it keys that client's cancellations.
      response.setHeader('Mcp-Session-Id', issueSessionId(userId, apiKey));
      response.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id');
    }
    await transport.handleRequest(request, response, body);
  }

  private serverFor(caller: McpCaller, response: Response): Server {
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
      instructions: INSTRUCTIONS,
    });
    server.onerror = (error) => this.logger.debug(`mcp: ${error.message}`);
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.table.definitions }));
    server.setRequestHandler(CallToolMethod, async (raw, extra): Promise<CallToolResult> => {
      // The Server has checked it against CallToolRequestSchema before calling this.
      const request = CallToolRequestSchema.parse(raw);
      const { name, arguments: args } = request.params;
      if (!this.table.has(name)) {
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 100)}`);
      }
      const token = request.params._meta?.progressToken;
      const call = WAITING_TOOLS.includes(name)
        ? await this.watchCall(caller, extra.requestId, extra.signal)
        : { signal: extra.signal, dispose: () => undefined };
      try {
        return await this.table.call(
          name,
          args,
          {
            userId: caller.userId,
            keyId: caller.keyId,
            webBase: caller.webBase,
            notify:
              token === undefined
                ? null
                : (update) =>
                    extra.sendNotification({
                      method: 'notifications/progress',
                      params: { progressToken: token, ...update },
                    }),
            progressIntervalMs: this.config.mcp.progressIntervalMs,
            stop: call.signal,
            holdStream: () => this.holdStream(caller, response),
            now: () => Date.now(),
          },
          this,
        );
      } finally {
        call.dispose();
      }
    });
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: [
        {
          uriTemplate: TRANSCRIPT_URI_TEMPLATE,
          name: 'deliberation-transcript',
          title: 'Deliberation transcript',
          description:
            "One of your deliberations in Markdown: the question, every model's answers, rankings, votes, " +
            'scores or estimates, failures, the final answer, usage and cost.',
          mimeType: 'text/markdown',
        },
      ],
    }));
    // The caller's most recent deliberations (each result also links its own transcript).
    server.setRequestHandler(ListResourcesRequestSchema, () => this.listTranscripts(caller.userId));
    server.setRequestHandler(ReadResourceRequestSchema, (request) =>
      this.readTranscript(caller.userId, request.params.uri),
    );
    server.setNotificationHandler(CancelledNotificationSchema, (notification) =>
      this.cancelCall(caller, notification.params.requestId),
    );
    return server;
  }

  /** The transcripts of the caller's RECENT_LISTED most recent deliberations, newest first. */
  private async listTranscripts(userId: string): Promise<ListResourcesResult> {
    let recent: RecentDeliberation[];
    try {
      recent = await this.deliberations.recent(userId, RECENT_LISTED);
    } catch (error) {
      throw this.resourceError('resources/list', error);
    }
    return {
      resources: recent.map((d) => ({
        uri: transcriptUri(d.messageId),
        name: `deliberation-${d.messageId}`,
        title: (d.title ?? d.question).slice(0, 120) || `${d.mode} deliberation`,
        description: `${d.mode}, ${d.status}, started ${d.createdAt.toISOString()}`,
        mimeType: 'text/markdown',
      })),
    };
  }

  private async readTranscript(userId: string, uri: string): Promise<ReadResourceResult> {
    const id = TRANSCRIPT_URI.exec(uri)?.[1];
    const notFound = () => new McpError(RESOURCE_NOT_FOUND, 'Resource not found', { uri: uri.slice(0, 200) });
    if (!id) throw notFound();
    let view: DeliberationView;
    try {
      view = await this.deliberations.view(userId, id);
    } catch (error) {
      if (error instanceof ApiError && error.getStatus() === 404) throw notFound();
      throw this.resourceError('resources/read', error);
    }
    return { contents: [{ uri, mimeType: 'text/markdown', text: transcriptMarkdown(view) }] };
  }

  /** A resources/* failure as the client sees it: storage away (worth a retry), else ours (logged). */
  private resourceError(method: string, error: unknown): McpError {
    if (isStoreUnavailable(error)) {
      // The words and retry hint HTTP and Socket.IO give for the same condition (errorAnswerOf).
      return new McpError(ErrorCode.InternalError, STORAGE_UNAVAILABLE, {
        statusCode: 503,
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      });
    }
    this.logError(method, error);
    return new McpError(ErrorCode.InternalError, 'Something went wrong on our side');
  }

  /**
   * A waiting call's end for its client: its connection closed, or its client cancelled it
   * (`notifications/cancelled`, recorded by whichever replica received it, looked for every
   * CANCELLATION_CHECK_MS). Redis trouble leaves the call waiting, never failed.
   */
  private async watchCall(
    caller: McpCaller,
    requestId: RequestId,
    connection: AbortSignal,
  ): Promise<{ signal: AbortSignal; dispose: () => void }> {
    const key = this.cancellations.keyOf(caller.userId, caller.sessionId, requestId);
    const ended = new AbortController();
    const end = () => ended.abort();
    connection.addEventListener('abort', end, { once: true });
    if (connection.aborted) end();
    let timer: NodeJS.Timeout | null = null;
    const check = async (): Promise<void> => {
      const cancelled = await this.cancellations.cancelled(key).catch((error: unknown) => {
        this.logger.warn(`could not read an MCP call's cancellation: ${String(error)}`);
        return false;
      });
      if (cancelled) end();
      else if (!ended.signal.aborted) timer = setTimeout(() => void check(), CANCELLATION_CHECK_MS);
    };
    if (key !== null) await check();
    return {
      signal: ended.signal,
      dispose: () => {
        end();
        if (timer) clearTimeout(timer);
        connection.removeEventListener('abort', end);
      },
    };
  }

  /** The client's `notifications/cancelled`: ends that call's wait, wherever it runs (never the deliberation). */
  private async cancelCall(caller: McpCaller, requestId: RequestId | undefined): Promise<void> {
    if (requestId === undefined) return;
    const key = this.cancellations.keyOf(caller.userId, caller.sessionId, requestId);
    await this.cancellations.cancel(key).catch((error: unknown) => {
      this.logger.warn(`could not record an MCP call's cancellation: ${String(error)}`);
    });
  }

  /**
   * One of the user's live streams while a call waits; revoking its key drops the connection (the
   * transport still writes to the response, so it is destroyed rather than ended). The deliberation
   * goes on, as for any closed connection.
   */
  private holdStream(caller: McpCaller, response: Response): () => void {
    const stream = this.streams.open('sse', caller.userId, caller.keyId, () => response.destroy());
    return () => stream.release();
  }

  // ——— ToolBackend ———

  async start(
    userId: string,
    body: Record<string, unknown>,
    idempotencyKey?: string,
    keyId: string | null = null,
  ): Promise<StartedRun> {
    const rejoined =
      idempotencyKey !== undefined && (await this.acceptedBefore(userId, body, idempotencyKey));
    const accepted = await this.deliberations.start(userId, body, idempotencyKey, { apiKeyId: keyId });
    return { ...accepted, rejoined };
  }

  /**
   * Whether a request with this idempotency key and body was accepted before (the start then answers
   * its deliberation). A malformed key or another body is left to the start to refuse.
   */
  private async acceptedBefore(userId: string, body: unknown, idempotencyKey: string): Promise<boolean> {
    let context: IdempotencyContext | null;
    try {
      context = idempotencyContext(userId, 'deliberation', idempotencyKey, body);
    } catch {
      return false;
    }
    if (!context) return false;
    const stored = await this.idempotencyKeys.find(context);
    return stored !== null && stored.requestHash === context.requestHash;
  }

  async stageOf(userId: string, messageId: string): Promise<string | null> {
    return (await this.deliberations.ownedMessage(userId, messageId)).stage;
  }

  view(userId: string, messageId: string): Promise<DeliberationView> {
    return this.deliberations.view(userId, messageId);
  }

  cancel(userId: string, messageId: string): Promise<void> {
    return this.cancels.cancel(userId, messageId);
  }

  follow(messageId: string, onEvent: (event: DeliveredEvent) => void, stop: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (stop.aborted) return resolve();
      const delivery = this.hub.subscribe(messageId, 0, onEvent, () => resolve());
      stop.addEventListener('abort', () => delivery.close(), { once: true });
    });
  }

  async plannedCalls(userId: string, messageId: string): Promise<number | null> {
    const message = await this.deliberations.ownedMessage(userId, messageId);
    const definition = modeDefinition(message.mode);
    if (!definition) return null;
    const plan = planDeliberation(definition, { question: 'question', config: message.config, title: false });
    const calls = plan.walks.map((walk) => walk.calls.length);
    return calls.length > 0 ? Math.max(...calls) : null;
  }

  modes(): ModeDescription[] {
    return this.modesController.list();
  }

  models(): Promise<ModelsResponse> {
    return this.catalogue.list();
  }

  logError(what: string, error: unknown): void {
    this.logger.error(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof Error && error.stack) this.logger.debug(error.stack);
  }

  isUnavailable(error: unknown): boolean {
    return isStoreUnavailable(error);
  }
}

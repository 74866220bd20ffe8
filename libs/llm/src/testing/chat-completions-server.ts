import { createServer, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';

/**
 * What the fake server does for one call. A request with `stream: true` gets `success` as a
 * `text/event-stream` of chunks (the content split over several, usage in a final chunk when
 * `stream_options.include_usage` is set, then `data: [DONE]`); the other behaviours answer the
 * same way whether or not streaming was asked, except the `stream-*` faults, which only make
 * sense in a stream (without one they fall back to the nearest non-streamed fault).
 */
export type ChatBehaviour =
  | {
      kind: 'success';
      /** Defaults to `echo: <last user message>`. */
      content?: string | ((request: RecordedChatRequest) => string);
      /** Reported as `model`; defaults to the requested model. */
      servedModel?: string;
      promptTokens?: number;
      completionTokens?: number;
      /** OpenRouter-style `usage.cost`; omitted from the body when null. */
      cost?: number | null;
      /** Omit the `usage` object entirely. */
      noUsage?: boolean;
      finishReason?: string;
      /** Answer after this long (the request still counts as pending meanwhile). */
      delayMs?: number;
      /** Streamed answers: how many chunks the content is split into (default 3, at most one per character). */
      chunks?: number;
      /** Streamed answers: the pause between two chunks (default none). */
      chunkDelayMs?: number;
    }
  /** 429 with `Retry-After: retryAfterSeconds` and/or `retry-after-ms: retryAfterMs`. */
  | { kind: 'rate-limit'; retryAfterSeconds?: number; retryAfterMs?: number; message?: string }
  | { kind: 'http-error'; status: number; message?: string; headers?: Record<string, string> }
  /** Never answers; the request settles as 'client-disconnected' when the client gives up. */
  | { kind: 'hang' }
  /**
   * Sends 200 headers (a JSON content type and a content length), optionally the first bytes of
   * the body, then nothing more; the request settles as 'client-disconnected' when the client gives up.
   */
  | { kind: 'stall'; partialBody?: string }
  /**
   * The server destroys the connection (the client sees a reset): before any byte of the
   * response (`at: 'start'`, the default), right after 200 headers (`'headers'`), or halfway
   * through a successful body (`'body'`). The request settles as 'reset'.
   */
  | { kind: 'reset'; at?: 'start' | 'headers' | 'body' }
  /** 200 with an OpenRouter-style `{ error: { code, message } }` body (optionally with an errored choice). */
  | { kind: 'error-body'; code: number | string; message?: string; withErroredChoice?: boolean }
  /**
   * Streams `afterChunks` content chunks (default 1), then a chunk carrying an OpenRouter-style
   * `error: { code, message }` (and a choice with `finish_reason: 'error'`), then `[DONE]`.
   * Without `stream: true`, the same as `error-body`.
   */
  | { kind: 'stream-error'; code: number | string; message?: string; afterChunks?: number }
  /**
   * Streams `afterChunks` content chunks (default 1), then the connection goes before any
   * finish_reason or `[DONE]`: destroyed (`end: 'destroy'`, the default; settles as 'reset') or
   * an orderly end of the response (`'end'`; settles as 'answered'). Without `stream: true`,
   * the same as `reset` at 'body'.
   */
  | { kind: 'stream-cut'; afterChunks?: number; end?: 'destroy' | 'end' }
  /**
   * Streams `afterChunks` content chunks (default 1), then nothing more; the request settles as
   * 'client-disconnected' when the client gives up. Without `stream: true`, the same as `stall`.
   */
  | { kind: 'stream-stall'; afterChunks?: number }
  /** Anything else: full control over status, headers and body text. */
  | { kind: 'raw'; status: number; headers?: Record<string, string>; body: string };

export interface ScriptContext {
  request: RecordedChatRequest;
  /** 0-based index among all chat-completions calls this server received. */
  callIndex: number;
  /** 0-based index among calls for the same model. */
  modelCallIndex: number;
}

export type ScriptFn = (context: ScriptContext) => ChatBehaviour;

/**
 * Declarative script. Lookup order: `byModel[model]`, then `sequence`, then `fallback`
 * (default: success). Arrays are consumed per call; the last entry repeats once exhausted.
 */
export interface ChatScript {
  byModel?: Record<string, ChatBehaviour | ChatBehaviour[]>;
  sequence?: ChatBehaviour[];
  fallback?: ChatBehaviour;
}

export type RequestOutcome = 'answered' | 'client-disconnected' | 'reset';

export interface RecordedChatRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or undefined when it was not JSON. */
  body: unknown;
  model: string | undefined;
  messages: unknown[];
  receivedAt: number;
  /** Undefined while the server has neither answered nor seen the client go away. */
  outcome: RequestOutcome | undefined;
  /** Resolves once `outcome` is set. */
  settled: Promise<RequestOutcome>;
}

/** An entry of the `GET /v1/models` list: `id` and `owned_by`, plus anything a test adds. */
export interface ListedModel {
  id: string;
  owned_by?: string;
  [field: string]: unknown;
}

/**
 * What `GET /v1/models` does for one request: the list (`{ object: 'list', data }`, each entry
 * with `object: 'model'` and `created` added), an HTTP error, no answer at all, or anything else.
 */
export type ModelsBehaviour =
  | { kind: 'list'; models: ListedModel[]; delayMs?: number }
  | { kind: 'http-error'; status: number; message?: string }
  | { kind: 'hang' }
  | { kind: 'raw'; status: number; headers?: Record<string, string>; body: string };

export interface RecordedModelsRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  receivedAt: number;
}

export const DEFAULT_LISTED_MODELS: readonly ListedModel[] = [
  { id: 'llama3.2', owned_by: 'library' },
  { id: 'qwen2.5:7b', owned_by: 'library' },
];

export interface ChatCompletionsServer {
  /** Ends in `/v1`, ready for an OpenAI-compatible client. */
  baseURL: string;
  /** Every request to the chat-completions route, in arrival order. */
  requests: RecordedChatRequest[];
  /** Every request to `GET /v1/models`, in arrival order. */
  modelsRequests: RecordedModelsRequest[];
  /** TCP connections accepted so far: fewer than requests when clients keep them alive. */
  readonly connections: number;
  setScript(script: ChatScript | ScriptFn): void;
  /** What `GET /v1/models` answers from now on (default: DEFAULT_LISTED_MODELS); a function gets the request's 0-based index. */
  setModels(behaviour: ModelsBehaviour | ((index: number) => ModelsBehaviour)): void;
  close(): Promise<void>;
}

const CHAT_PATH = '/v1/chat/completions';
const MODELS_PATH = '/v1/models';

export async function startChatCompletionsServer(
  initialScript: ChatScript | ScriptFn = {},
): Promise<ChatCompletionsServer> {
  let script = initialScript;
  const requests: RecordedChatRequest[] = [];
  const modelsRequests: RecordedModelsRequest[] = [];
  let models: ModelsBehaviour | ((index: number) => ModelsBehaviour) = {
    kind: 'list',
    models: [...DEFAULT_LISTED_MODELS],
  };
  const perModelCount = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `test server failure: ${String(err)}` } });
    });
  });
  let accepted = 0;
  server.on('connection', (socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const text = await readBody(req);
    if (req.method === 'GET' && path === MODELS_PATH) {
      const index = modelsRequests.length;
      modelsRequests.push({ method: req.method, path, headers: req.headers, receivedAt: Date.now() });
      answerModels(res, typeof models === 'function' ? models(index) : models);
      return;
    }
    if (req.method !== 'POST' || path !== CHAT_PATH) {
      sendJson(res, 404, { error: { message: `no route for ${req.method} ${path}` } });
      return;
    }
    const body = parseJson(text);
    const model = isRecord(body) && typeof body.model === 'string' ? body.model : undefined;

    let resolveSettled: (outcome: RequestOutcome) => void = () => undefined;
    const record: RecordedChatRequest = {
      method: req.method,
      path,
      headers: req.headers,
      body,
      model,
      messages: isRecord(body) && Array.isArray(body.messages) ? body.messages : [],
      receivedAt: Date.now(),
      outcome: undefined,
      settled: new Promise<RequestOutcome>((resolve) => (resolveSettled = resolve)),
    };
    const settle = (outcome: RequestOutcome): void => {
      if (record.outcome !== undefined) return;
      record.outcome = outcome;
      resolveSettled(outcome);
    };
    res.on('finish', () => settle('answered'));
    res.on('close', () => settle(res.writableFinished ? 'answered' : 'client-disconnected'));

    const callIndex = requests.length;
    const modelKey = model ?? '';
    const modelCallIndex = perModelCount.get(modelKey) ?? 0;
    perModelCount.set(modelKey, modelCallIndex + 1);
    requests.push(record);

    const behaviour = pick(script, { request: record, callIndex, modelCallIndex });
    respond(res, behaviour, record, settle);
  }

  function respond(
    res: ServerResponse,
    behaviour: ChatBehaviour,
    record: RecordedChatRequest,
    settle: (outcome: RequestOutcome) => void,
  ): void {
    const stream = wantsStream(record);
    switch (behaviour.kind) {
      case 'success': {
        const send = (): void => {
          if (stream) streamSuccess(res, behaviour, record);
          else sendJson(res, 200, successBody(behaviour, record, requests.length));
        };
        if (behaviour.delayMs) {
          const timer = setTimeout(() => {
            timers.delete(timer);
            if (!res.destroyed) send();
          }, behaviour.delayMs);
          timers.add(timer);
        } else {
          send();
        }
        return;
      }
      case 'rate-limit': {
        const headers: Record<string, string> = {};
        if (behaviour.retryAfterSeconds !== undefined)
          headers['retry-after'] = String(behaviour.retryAfterSeconds);
        if (behaviour.retryAfterMs !== undefined) headers['retry-after-ms'] = String(behaviour.retryAfterMs);
        sendJson(res, 429, errorBody(429, behaviour.message ?? 'Rate limit exceeded'), headers);
        return;
      }
      case 'http-error':
        sendJson(
          res,
          behaviour.status,
          errorBody(behaviour.status, behaviour.message ?? `Scripted HTTP ${behaviour.status}`),
          behaviour.headers,
        );
        return;
      case 'hang':
        return;
      case 'stall': {
        const partial = behaviour.partialBody ?? '';
        res.writeHead(200, {
          'content-type': 'application/json',
          // Promises more than ever comes, so the client waits for the rest.
          'content-length': Buffer.byteLength(partial) + 4096,
        });
        res.flushHeaders();
        if (partial) res.write(partial);
        return;
      }
      case 'reset': {
        const at = behaviour.at ?? 'start';
        const destroy = (): void => {
          settle('reset');
          // A TCP RST (ECONNRESET at the client), not an orderly close.
          res.socket?.resetAndDestroy();
        };
        if (at === 'start') {
          destroy();
          return;
        }
        // Let the bytes written so far reach the client before the connection goes.
        const later = (): void => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            destroy();
          }, 25);
          timers.add(timer);
        };
        const text = JSON.stringify(successBody({ kind: 'success' }, record, requests.length));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.flushHeaders();
        if (at === 'body') res.write(text.slice(0, Math.floor(text.length / 2)), later);
        else later();
        return;
      }
      case 'error-body': {
        const body: Record<string, unknown> = {
          id: `gen-${requests.length}`,
          object: 'chat.completion',
          created: nowSeconds(),
          model: record.model ?? 'unknown',
          error: { code: behaviour.code, message: behaviour.message ?? 'Upstream provider error' },
        };
        if (behaviour.withErroredChoice) {
          body.choices = [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'error' }];
        }
        sendJson(res, 200, body);
        return;
      }
      case 'raw':
        res.writeHead(behaviour.status, behaviour.headers);
        res.end(behaviour.body);
        return;
      case 'stream-error': {
        if (!stream) {
          respond(
            res,
            { kind: 'error-body', code: behaviour.code, message: behaviour.message },
            record,
            settle,
          );
          return;
        }
        const chunks = startStream(res, record, behaviour.afterChunks);
        const model = record.model ?? 'unknown';
        chunks.push(
          sse({
            ...chunkEnvelope(chunks.id, model),
            error: { code: behaviour.code, message: behaviour.message ?? 'Upstream provider error' },
            choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
          }),
          'data: [DONE]\n\n',
        );
        writeAll(res, chunks.lines, 0, () => res.end());
        return;
      }
      case 'stream-cut': {
        if (!stream) {
          respond(res, { kind: 'reset', at: 'body' }, record, settle);
          return;
        }
        const chunks = startStream(res, record, behaviour.afterChunks);
        writeAll(res, chunks.lines, 0, () => {
          if (behaviour.end === 'end') {
            res.end();
            return;
          }
          // Let the chunks reach the client before the connection goes.
          const timer = setTimeout(() => {
            timers.delete(timer);
            settle('reset');
            res.socket?.destroy();
          }, 25);
          timers.add(timer);
        });
        return;
      }
      case 'stream-stall': {
        if (!stream) {
          respond(res, { kind: 'stall' }, record, settle);
          return;
        }
        const chunks = startStream(res, record, behaviour.afterChunks);
        writeAll(res, chunks.lines, 0, () => undefined);
        return;
      }
    }
  }

  function answerModels(res: ServerResponse, behaviour: ModelsBehaviour): void {
    switch (behaviour.kind) {
      case 'list': {
        const send = (): void =>
          sendJson(res, 200, {
            object: 'list',
            data: behaviour.models.map((m) => ({ object: 'model', created: nowSeconds(), ...m })),
          });
        if (!behaviour.delayMs) {
          send();
          return;
        }
        const timer = setTimeout(() => {
          timers.delete(timer);
          send();
        }, behaviour.delayMs);
        timers.add(timer);
        return;
      }
      case 'http-error':
        sendJson(
          res,
          behaviour.status,
          errorBody(behaviour.status, behaviour.message ?? `Scripted HTTP ${behaviour.status}`),
        );
        return;
      case 'hang':
        return;
      case 'raw':
        res.writeHead(behaviour.status, behaviour.headers);
        res.end(behaviour.body);
        return;
    }
  }

  /** Writes `lines` one by one, `gapMs` apart, then calls `done` (unless the client went away). */
  function writeAll(res: ServerResponse, lines: string[], gapMs: number, done: () => void): void {
    let index = 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (index >= lines.length) {
        done();
        return;
      }
      const line = lines[index++];
      if (gapMs > 0 && index > 1) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.destroyed) res.write(line, next);
        }, gapMs);
        timers.add(timer);
      } else {
        res.write(line, next);
      }
    };
    next();
  }

  function streamSuccess(
    res: ServerResponse,
    behaviour: Extract<ChatBehaviour, { kind: 'success' }>,
    record: RecordedChatRequest,
  ): void {
    if (res.destroyed) return;
    const body = successBody(behaviour, record, requests.length);
    const id = String(body.id);
    const model = String(body.model);
    const content = contentOf(behaviour, record);
    const lines = [
      sse({
        ...chunkEnvelope(id, model),
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      }),
      ...splitContent(content, behaviour.chunks ?? 3).map((piece) =>
        sse({
          ...chunkEnvelope(id, model),
          choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
        }),
      ),
      sse({
        ...chunkEnvelope(id, model),
        choices: [{ index: 0, delta: {}, finish_reason: behaviour.finishReason ?? 'stop' }],
      }),
    ];
    if (includeUsage(record) && body.usage !== undefined) {
      lines.push(sse({ ...chunkEnvelope(id, model), choices: [], usage: body.usage }));
    }
    lines.push('data: [DONE]\n\n');
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    writeAll(res, lines, behaviour.chunkDelayMs ?? 0, () => res.end());
  }

  /** 200 event-stream headers and the first `count` chunks of a default answer, not yet written. */
  function startStream(
    res: ServerResponse,
    record: RecordedChatRequest,
    count = 1,
  ): { id: string; lines: string[]; push: (...lines: string[]) => void } {
    const id = `chatcmpl-test-${requests.length}`;
    const model = record.model ?? 'unknown';
    const pieces = splitContent(`echo: ${lastUserMessage(record.messages)} and some more words`, count + 1);
    const lines = [
      sse({
        ...chunkEnvelope(id, model),
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      }),
      ...pieces.slice(0, count).map((piece) =>
        sse({
          ...chunkEnvelope(id, model),
          choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
        }),
      ),
    ];
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    return { id, lines, push: (...more) => lines.push(...more) };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    modelsRequests,
    get connections() {
      return accepted;
    },
    setScript(next) {
      script = next;
    },
    setModels(next) {
      models = next;
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Hanging requests and idle keep-alive sockets would otherwise keep close() waiting.
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

function pick(script: ChatScript | ScriptFn, context: ScriptContext): ChatBehaviour {
  if (typeof script === 'function') return script(context);
  const model = context.request.model;
  const forModel = model !== undefined ? script.byModel?.[model] : undefined;
  if (forModel !== undefined) return nth(forModel, context.modelCallIndex);
  if (script.sequence && script.sequence.length > 0) return nth(script.sequence, context.callIndex);
  return script.fallback ?? { kind: 'success' };
}

function nth(entry: ChatBehaviour | ChatBehaviour[], index: number): ChatBehaviour {
  if (!Array.isArray(entry)) return entry;
  if (entry.length === 0) return { kind: 'success' };
  return entry[Math.min(index, entry.length - 1)];
}

function contentOf(
  behaviour: Extract<ChatBehaviour, { kind: 'success' }>,
  record: RecordedChatRequest,
): string {
  return typeof behaviour.content === 'function'
    ? behaviour.content(record)
    : (behaviour.content ?? `echo: ${lastUserMessage(record.messages)}`);
}

function wantsStream(record: RecordedChatRequest): boolean {
  return isRecord(record.body) && record.body.stream === true;
}

function includeUsage(record: RecordedChatRequest): boolean {
  return (
    isRecord(record.body) &&
    isRecord(record.body.stream_options) &&
    record.body.stream_options.include_usage === true
  );
}

function chunkEnvelope(id: string, model: string): Record<string, unknown> {
  return { id, object: 'chat.completion.chunk', created: nowSeconds(), model };
}

function sse(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

/** At most `count` non-empty pieces (whole code points) that join back to `text`; none for ''. */
function splitContent(text: string, count: number): string[] {
  const points = Array.from(text);
  const n = Math.max(1, Math.min(Math.floor(count), points.length));
  const size = Math.ceil(points.length / n);
  const pieces: string[] = [];
  for (let i = 0; i < points.length; i += size) pieces.push(points.slice(i, i + size).join(''));
  return pieces;
}

function successBody(
  behaviour: Extract<ChatBehaviour, { kind: 'success' }>,
  record: RecordedChatRequest,
  id: number,
): Record<string, unknown> {
  const content = contentOf(behaviour, record);
  const promptTokens = behaviour.promptTokens ?? 10;
  const completionTokens = behaviour.completionTokens ?? 5;
  const body: Record<string, unknown> = {
    id: `chatcmpl-test-${id}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model: behaviour.servedModel ?? record.model ?? 'unknown',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content },
        finish_reason: behaviour.finishReason ?? 'stop',
      },
    ],
  };
  if (!behaviour.noUsage) {
    const usage: Record<string, unknown> = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    };
    if (behaviour.cost !== undefined && behaviour.cost !== null) usage.cost = behaviour.cost;
    body.usage = usage;
  }
  return body;
}

function errorBody(status: number, message: string): Record<string, unknown> {
  return { error: { message, type: status === 429 ? 'rate_limit_error' : 'api_error', code: status } };
}

function lastUserMessage(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isRecord(m) && m.role === 'user' && typeof m.content === 'string') return m.content;
  }
  return '';
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

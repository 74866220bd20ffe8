import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * What /mcp checks of a POST's JSON-RPC envelope before the SDK sees it: the batch rules, and each
 * request's params. Plain functions of the parsed body.
 */

/** Most messages one JSON-RPC batch may hold (and only under protocol versions that have batches). */
export const MAX_BATCH_MESSAGES = 10;
/** The first MCP protocol version without JSON-RPC batches (they were removed from the specification). */
export const BATCHLESS_SINCE = '2025-06-18';
/**
 * The version a request without an MCP-Protocol-Version header is taken to speak, as the Streamable
 * HTTP transport specification tells a server to assume.
 */
export const VERSION_WITHOUT_HEADER = '2025-03-26';

interface JsonRpcShape {
  method?: unknown;
  params?: unknown;
}

const asShape = (message: unknown): JsonRpcShape | null =>
  typeof message === 'object' && message !== null && !Array.isArray(message)
    ? (message as JsonRpcShape)
    : null;

/** A JSON-RPC `initialize` request. */
export const isInitialize = (message: unknown): boolean => asShape(message)?.method === 'initialize';

/**
 * The protocol version a POST speaks: its MCP-Protocol-Version header, else the version its
 * `initialize` asks for, else the one a server assumes without the header.
 */
export function protocolVersionOf(messages: readonly unknown[], header: string | undefined): string {
  if (header !== undefined && header.trim() !== '') return header.trim();
  for (const message of messages) {
    const params = asShape(message)?.params;
    if (isInitialize(message) && typeof params === 'object' && params !== null) {
      const asked = (params as { protocolVersion?: unknown }).protocolVersion;
      if (typeof asked === 'string') return asked;
    }
  }
  return VERSION_WITHOUT_HEADER;
}

/**
 * Why a JSON-RPC batch (a body that is an array) is refused, or null: it is empty, its protocol
 * version has no batches, or it holds more than MAX_BATCH_MESSAGES messages. The answer is a
 * JSON-RPC Invalid Request (-32600).
 */
export function batchRefusal(batch: readonly unknown[], protocolHeader: string | undefined): string | null {
  if (batch.length === 0) return 'Invalid Request: an empty JSON-RPC batch';
  const version = protocolVersionOf(batch, protocolHeader);
  if (version >= BATCHLESS_SINCE) {
    return (
      `Invalid Request: JSON-RPC batches are not part of MCP protocol version ${version.slice(0, 40)} ` +
      `(removed in ${BATCHLESS_SINCE}); send one message per POST`
    );
  }
  if (batch.length > MAX_BATCH_MESSAGES) {
    return (
      `Invalid Request: a JSON-RPC batch may hold at most ${MAX_BATCH_MESSAGES} messages, this one holds ` +
      `${batch.length}; each counts as a request against the rate limit`
    );
  }
  return null;
}

interface Issue {
  code: string;
  path: PropertyKey[];
  message: string;
  expected?: unknown;
}
interface ParamsSchema {
  safeParse(input: unknown): { success: true } | { success: false; error: { issues: Issue[] } };
}

/** The protocol's schema of each request method the server answers. */
const REQUEST_SCHEMAS: ReadonlyMap<string, ParamsSchema> = new Map<string, ParamsSchema>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
  ['resources/list', ListResourcesRequestSchema],
  ['resources/templates/list', ListResourceTemplatesRequestSchema],
  ['resources/read', ReadResourceRequestSchema],
]);

/** At most this many fields are named in one error. */
const ISSUES_NAMED = 3;

/**
 * What is wrong with a request's params, as the JSON-RPC Invalid Params (-32602) message that names
 * each field (`Invalid params for resources/read: params.uri is required`), or null when they are
 * fine or the method is not one the server answers (that is Method not found, the SDK's answer).
 * No validator's dump and no value sent is repeated.
 */
export function paramsProblem(message: unknown): string | null {
  const shape = asShape(message);
  if (!shape || typeof shape.method !== 'string') return null;
  const schema = REQUEST_SCHEMAS.get(shape.method);
  if (!schema) return null;
  const input = { method: shape.method, params: shape.params };
  const parsed = schema.safeParse(input);
  if (parsed.success) return null;
  const named = [...new Set(parsed.error.issues.map((issue) => describe(issue, input)))];
  const more = named.length > ISSUES_NAMED ? ` (and ${named.length - ISSUES_NAMED} more)` : '';
  return `Invalid params for ${shape.method}: ${named.slice(0, ISSUES_NAMED).join('; ')}${more}`;
}

function describe(issue: Issue, input: unknown): string {
  const path = pathText(issue.path);
  if (issue.code === 'invalid_type') {
    if (valueAt(input, issue.path) === undefined) return `${path} is required`;
    const expected =
      issue.expected === 'record'
        ? 'object'
        : typeof issue.expected === 'string'
          ? issue.expected
          : 'another type';
    return `${path} must be ${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`;
  }
  if (issue.code === 'unrecognized_keys') return `${path} has fields the protocol does not define`;
  return `${path} is not valid (${issue.message.replace(/\s+/g, ' ').slice(0, 100)})`;
}

/** `params.capabilities.roots` / `params.items[2]`, each key shortened and printable. */
function pathText(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'the request';
  return path
    .map((key, i) => {
      if (typeof key === 'number') return `[${key}]`;
      const text = String(key)
        .replace(/[^\x20-\x7e]/g, '?')
        .slice(0, 40);
      return i === 0 ? text : `.${text}`;
    })
    .join('');
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    if (!Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { Target } from './args';
import { CliError, keyRefused, unreachable } from './errors';

/**
 * How long one tool call may run in all, however often the gateway reports progress (a
 * deliberation is stopped by its own DELIBERATION_CAP_MS long before).
 */
const MAX_CALL_MS = 6 * 60 * 60_000;
/** How long the gateway may go without a word (it reports progress every few seconds). */
const SILENCE_MS = 120_000;

const log = (line: string): void => {
  process.stderr.write(`conclave mcp: ${line}\n`);
};

/** The API's message in an error body (`{"message": …}` or JSON-RPC's `{"error": {"message": …}}`), if any. */
function messageIn(text: string): string | null {
  const json = /\{.*\}/s.exec(text)?.[0];
  if (!json) return null;
  try {
    const body = JSON.parse(json) as { message?: unknown; error?: { message?: unknown } };
    if (typeof body.message === 'string') return body.message;
    if (typeof body.error?.message === 'string') return body.error.message;
  } catch {
    // not JSON
  }
  return null;
}

/** What went wrong talking to the gateway, said for a person (stderr) or a client (an MCP error). */
export function upstreamFailure(error: unknown, target: Target): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof StreamableHTTPError) {
    const status = error.code ?? 0;
    if (status === 401) return keyRefused(target.key);
    if (status === 404)
      return new CliError(`${target.url} has no MCP endpoint at /mcp: is it a Conclave gateway?`);
    const message = messageIn(error.message);
    return new CliError(
      message ?? `Conclave answered HTTP ${status}`,
      undefined,
      status > 0 ? status : undefined,
    );
  }
  // fetch's own failures: refused, reset, DNS
  if (error instanceof TypeError) return unreachable(target.url);
  return new CliError(error instanceof Error ? error.message : String(error));
}

/** An error to answer the stdio client with: MCP errors as they came, the rest as an internal error. */
function forwardable(error: unknown, target: Target): McpError {
  if (error instanceof McpError) return error;
  return new McpError(ErrorCode.InternalError, upstreamFailure(error, target).message);
}

/**
 * `conclave mcp`: an MCP server on stdin/stdout for desktop clients, whose tools and resources are
 * those of the gateway's /mcp (CONCLAVE_URL, with CONCLAVE_API_KEY as the bearer). Each request is
 * passed on as it came; progress comes back under the caller's own token, and the caller's
 * cancellation (or its own timeout) ends the call on the gateway too — the deliberation goes on, as
 * over HTTP: only cancel_deliberation stops it. Only protocol goes
 * to stdout; lines for a person go to stderr. Resolves with the exit code when stdin closes; a
 * gateway that cannot be reached, or refuses the key, at start is an error (exit code 1).
 */
export async function mcpCommand(target: Target): Promise<number> {
  const upstream = new Client({ name: 'conclave-cli', version: '0.1.0' });
  const headers: Record<string, string> = target.key ? { authorization: `Bearer ${target.key}` } : {};
  try {
    await upstream.connect(
      new StreamableHTTPClientTransport(new URL(`${target.url}/mcp`), { requestInit: { headers } }),
    );
  } catch (error) {
    await upstream.close().catch(() => undefined);
    throw upstreamFailure(error, target);
  }
  const version = upstream.getServerVersion();
  log(`connected to ${target.url}/mcp (${version?.name ?? 'conclave'} ${version?.version ?? ''})`.trimEnd());

  const server = new Server(
    { name: 'conclave', title: 'Conclave', version: '0.1.0' },
    { capabilities: { tools: {}, resources: {} }, instructions: upstream.getInstructions() },
  );
  server.onerror = (error) => log(`protocol error: ${error.message}`);
  const passOn = <T>(call: () => Promise<T>): Promise<T> =>
    call().catch((error: unknown) => {
      throw forwardable(error, target);
    });
  server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
    passOn(() => upstream.listTools(request.params, { signal: extra.signal })),
  );
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const token = request.params._meta?.progressToken;
    return passOn(() =>
      upstream.callTool({ name: request.params.name, arguments: request.params.arguments }, undefined, {
        // The caller's cancellation becomes the gateway's (notifications/cancelled upstream): the
        // gateway stops waiting, and the deliberation goes on.
        signal: extra.signal,
        // Always ask for progress: it keeps this call alive while a long deliberation runs.
        onprogress: ({ progress, total, message }) => {
          if (token === undefined) return;
          void extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress, total, message },
            })
            .catch(() => undefined);
        },
        timeout: SILENCE_MS,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: MAX_CALL_MS,
      }),
    );
  });
  server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
    passOn(() => upstream.listResources(request.params, { signal: extra.signal })),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (request, extra) =>
    passOn(() => upstream.listResourceTemplates(request.params, { signal: extra.signal })),
  );
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
    passOn(() => upstream.readResource(request.params, { signal: extra.signal })),
  );

  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  // The client went away (it closes our stdin): so do we.
  const end = () => void server.close();
  process.stdin.once('end', end);
  process.stdin.once('close', end);
  await server.connect(new StdioServerTransport());
  await closed;
  await upstream.close().catch(() => undefined);
  return 0;
}

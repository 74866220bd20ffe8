import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress, TextContent } from '@modelcontextprotocol/sdk/types.js';
import type { DeliberationView } from '@conclave/contracts';
import { finalTextOf } from '@conclave/outcomes';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * `conclave mcp`: the MCP server desktop clients start as a command, talking MCP on stdin/stdout
 * and passing everything on to a gateway's /mcp. Driven here by the SDK's own Client over
 * StdioClientTransport, as a desktop client would.
 */

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin/conclave.js');

interface Outcome {
  messageId: string;
  status: string;
  finalText: string | null;
  partial: boolean;
  running?: {
    stage: string | null;
    stages: { stage: string; answered: string[] }[];
    next: { tool: string; arguments: { messageId: string; waitSeconds: number } };
  };
}

const textOf = (result: CallToolResult): string =>
  result.content
    .filter((c): c is TextContent => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
const resourceText = (content: { text: string } | { blob: string }): string =>
  'text' in content ? content.text : '';
const outcomeOf = (result: CallToolResult): Outcome => result.structuredContent as unknown as Outcome;

/** The environment a desktop client gives the command: only what its config says, and a PATH. */
const envFor = (url: string, key?: string): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  CONCLAVE_URL: url,
  ...(key ? { CONCLAVE_API_KEY: key } : {}),
});

/** Runs `conclave mcp` to its end, with nothing on stdin. */
function runToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, 'mcp'],
      { cwd: ROOT, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('conclave mcp (stdio)', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey', MCP_PROGRESS_INTERVAL_MS: '300' });
  let key: string;
  let client: Client;
  let stderr = '';
  const protocolErrors: Error[] = [];

  async function storedView(messageId: string): Promise<DeliberationView> {
    return (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`, { token: key })).body;
  }

  beforeAll(async () => {
    await stack.start();
    key = await stack.createUser('desktop');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      cwd: ROOT,
      env: envFor(stack.baseUrl, key),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    client = new Client({ name: 'desktop-e2e', version: '1.0.0' });
    // A line on stdout that is not protocol would surface here.
    client.onerror = (error) => protocolErrors.push(error);
    await client.connect(transport);
  });

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stack.stop();
  });

  it("offers the gateway's tools, and says on stderr where it is connected", async () => {
    const { tools } = await client.listTools();
    const direct = new Client({ name: 'direct', version: '1.0.0' });
    await direct.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    expect(tools).toEqual((await direct.listTools()).tools);
    await direct.close();
    expect(tools.map((t) => t.name)).toContain('deliberate');
    expect(stderr).toContain(`conclave mcp: connected to ${stack.baseUrl}/mcp`);
  });

  it('runs deliberate with progress under the caller’s token, its result validated', async () => {
    const updates: Progress[] = [];
    const result = (await client.callTool(
      {
        name: 'deliberate',
        arguments: { question: 'Through stdio?', councilModels: ['sim/athena', 'sim/hermes'] },
      },
      undefined,
      { onprogress: (p) => updates.push(p) },
    )) as CallToolResult;
    const outcome = outcomeOf(result);
    expect(outcome.status).toBe('complete');
    expect(outcome.finalText).toBe(finalTextOf(await storedView(outcome.messageId)));
    const messages = updates.map((u) => u.message);
    expect(messages).toEqual(
      expect.arrayContaining([expect.stringMatching(/^stage1: sim\/athena answered/)]),
    );
    for (let i = 1; i < updates.length; i++)
      expect(updates[i].progress).toBeGreaterThan(updates[i - 1].progress);

    const transcript = await client.readResource({ uri: `conclave://deliberations/${outcome.messageId}` });
    expect(resourceText(transcript.contents[0])).toContain('Through stdio?');
    await expect(client.readResource({ uri: 'conclave://deliberations/nope' })).rejects.toMatchObject({
      code: -32002,
    });
  });

  async function waitForStatus(messageId: string, wanted: string): Promise<DeliberationView> {
    let view = await storedView(messageId);
    for (let i = 0; i < 200 && view.status !== wanted; i++) {
      await sleep(50);
      view = await storedView(messageId);
    }
    expect(view.status).toBe(wanted);
    return view;
  }

  // The two below run side by side (and before the rest of the file): the first takes over a minute.
  it.concurrent(
    "a council longer than 60 s with the SDK's default options: deliberate answers in time, the run goes on, get_deliberation fetches it",
    async () => {
      const members = ['sim/a:delay25000', 'sim/b:delay25000'];
      const began = Date.now();
      // No options: the SDK's 60 s request timeout, not reset by progress.
      const first = (await client.callTool({
        name: 'deliberate',
        arguments: {
          question: 'A slow council?',
          councilModels: members,
          chairmanModel: 'sim/chair:delay15000',
        },
      })) as CallToolResult;
      expect(Date.now() - began).toBeLessThan(60_000);
      expect(first.isError).toBeFalsy();
      const running = outcomeOf(first);
      const { messageId } = running;
      expect(running).toMatchObject({ status: 'running', finalText: null });
      expect(running.running).toMatchObject({
        stage: 'stage2',
        stages: [{ stage: 'stage1', answered: expect.arrayContaining(members) }],
        next: { tool: 'get_deliberation', arguments: { messageId, waitSeconds: 45 } },
      });
      expect(textOf(first)).toContain(
        `call get_deliberation with messageId "${messageId}" and waitSeconds 45`,
      );
      expect((await storedView(messageId)).status).toBe('running');
      const next = (await client.callTool({
        name: 'get_deliberation',
        arguments: running.running?.next.arguments,
      })) as CallToolResult;
      expect(Date.now() - began).toBeGreaterThan(60_000);
      const done = outcomeOf(next);
      expect(done).toMatchObject({ messageId, status: 'complete', partial: false });
      expect(done.running).toBeUndefined();
      expect(done.finalText).toBe(finalTextOf(await storedView(messageId)));
    },
    150_000,
  );

  it.concurrent(
    "a client's cancellation or timeout ends its call, not the deliberation; cancel_deliberation stops it",
    async () => {
      const controller = new AbortController();
      let messageId = '';
      const call = client.callTool(
        {
          name: 'deliberate',
          arguments: { question: 'Stop over stdio', councilModels: ['sim/athena:delay20000', 'sim/hermes'] },
        },
        undefined,
        {
          signal: controller.signal,
          onprogress: (p) => {
            messageId ||= /started deliberation (\S+?);/.exec(p.message ?? '')?.[1] ?? '';
            if (messageId) controller.abort('stop');
          },
        },
      );
      await expect(call).rejects.toThrow();
      expect(messageId).toMatch(/^[0-9a-f-]{36}$/);
      // A client's own short timeout: the same.
      await expect(
        client.callTool({ name: 'get_deliberation', arguments: { messageId, waitSeconds: 30 } }, undefined, {
          timeout: 1000,
        }),
      ).rejects.toThrow(/timed out/i);
      // Before this change the cancellation stopped the run within milliseconds.
      await sleep(1500);
      expect((await storedView(messageId)).status).toBe('running');
      const cancelled = (await client.callTool({
        name: 'cancel_deliberation',
        arguments: { messageId },
      })) as CallToolResult;
      expect(outcomeOf(cancelled)).toMatchObject({ status: 'cancelled', partial: true });
      expect((await waitForStatus(messageId, 'cancelled')).error).toBe('Cancelled by the user.');
    },
    60_000,
  );

  it('answers a bad argument with a tool error naming the field', async () => {
    const result = (await client.callTool({
      name: 'deliberate',
      arguments: { question: 'x', mode: 'council', modeConfig: { councilModels: ['sim/a'] } },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/- modeConfig\.councilModels: /);
  });

  it('writes nothing but protocol on stdout', () => {
    // A line that is not JSON-RPC would have failed to parse on the client's side. (A progress
    // notification already on its way when the client cancelled a call is a race the protocol
    // allows: the client drops it.)
    const late = /^Received a progress notification for an unknown token/;
    expect(protocolErrors.filter((error) => !late.test(error.message))).toEqual([]);
    expect(stderr).not.toMatch(/error/i);
  });

  it('exits non-zero with a clear message when the gateway cannot be reached or refuses the key', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const unreachable = await runToExit(envFor(url, key));
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`cannot reach Conclave at ${url}`);
    expect(unreachable.stdout).toBe('');

    const refused = await runToExit(envFor(stack.baseUrl, 'ck_not_a_key'));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the API key was refused');
    expect(refused.stdout).toBe('');

    const missing = await runToExit(envFor(stack.baseUrl));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('this Conclave needs an API key');
  });
});

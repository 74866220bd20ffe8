import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ErrorCode,
  type CallToolResult,
  type Progress,
  type ResourceLink,
  type TextContent,
} from '@modelcontextprotocol/sdk/types.js';
import { MODE_NAMES, QUESTION_MAX_LENGTH, type DeliberationView, type ModeName } from '@conclave/contracts';
import { finalTextOf } from '@conclave/outcomes';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * The MCP server at /mcp, driven by the SDK's own Client over Streamable HTTP, on the real stack
 * (gateway, worker, PostgreSQL, Redis; the simulated models stand in for providers).
 */

const PROGRESS_INTERVAL_MS = 250;

/** What the tests read of structuredContent (the Client has validated all of it against outputSchema). */
interface Outcome {
  messageId: string;
  conversationId: string;
  mode: string;
  status: string;
  finalText: string | null;
  finalAuthor: { role: string; model: string; failed: boolean; error?: string } | null;
  partial: boolean;
  enoughAnswered: boolean | null;
  failures: { model: string; role: string; stage: string; error: string }[];
  panelists: { model: string; failed: boolean }[];
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
  links: { web: string; transcript: string };
  running?: {
    stage: string | null;
    waitedSeconds: number;
    stages: { stage: string; answered: string[]; failed: { model: string; error: string }[] }[];
    next: { tool: string; arguments: { messageId: string; waitSeconds: number } };
  };
}

const textOf = (result: CallToolResult): string =>
  result.content
    .filter((c): c is TextContent => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
const linkOf = (result: CallToolResult): ResourceLink | undefined =>
  result.content.find((c): c is ResourceLink => c.type === 'resource_link');
const resourceText = (content: { text: string } | { blob: string }): string =>
  'text' in content ? content.text : '';
const outcomeOf = (result: CallToolResult): Outcome => result.structuredContent as unknown as Outcome;

/** Each mode's request with simulated models (defaults where the mode has simulated ones). */
const REQUESTS: Record<ModeName, Record<string, unknown>> = {
  council: { question: 'What is the capital of France?', mode: 'council' },
  vote: {
    question: 'Name a prime number.',
    mode: 'vote',
    modeConfig: { models: ['sim/athena', 'sim/hermes', 'sim/apollo'] },
  },
  jury: {
    question: 'Is this summary accurate?',
    mode: 'jury',
    modeConfig: {
      content: 'Paris is the capital of France.',
      jurorModels: ['sim/athena', 'sim/hermes', 'sim/apollo'],
      foremanModel: 'sim/chairman',
    },
  },
  debate: {
    question: 'Should cities ban cars?',
    mode: 'debate',
    modeConfig: { models: ['sim/athena', 'sim/hermes', 'sim/apollo'] },
  },
  delphi: {
    question: 'How many people live in Paris, in millions?',
    mode: 'delphi',
    modeConfig: {
      panelistModels: ['sim/athena', 'sim/hermes', 'sim/apollo'],
      facilitatorModel: 'sim/chairman',
    },
  },
};

describe('MCP over Streamable HTTP (/mcp)', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    MCP_PROGRESS_INTERVAL_MS: String(PROGRESS_INTERVAL_MS),
  });
  const clients: Client[] = [];
  let alice: string;
  let bob: string;
  /** The long runs' user (their deliberations stay out of Alice's listings). */
  let carol: string;
  let aliceClient: Client;
  let bobClient: Client;

  /** An SDK client with the key as a bearer header, its tools listed (so it validates structured output). */
  async function connect(token?: string): Promise<Client> {
    const client = new Client({ name: 'conclave-e2e', version: '1.0.0' });
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), { requestInit: { headers } }),
    );
    clients.push(client);
    await client.listTools();
    return client;
  }

  /** A JSON-RPC message POSTed as a client would, and the answer (an SSE stream's messages, or JSON). */
  async function post(
    body: string,
    options: { token?: string; headers?: Record<string, string>; baseUrl?: string } = {},
  ): Promise<{ status: number; headers: Headers; messages: Record<string, unknown>[]; text: string }> {
    const response = await fetch(`${options.baseUrl ?? stack.baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...options.headers,
      },
      body,
    });
    const text = await response.text();
    let messages: Record<string, unknown>[] = [];
    if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      messages = text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    } else if (text) {
      try {
        messages = [JSON.parse(text) as Record<string, unknown>];
      } catch {
        messages = [];
      }
    }
    return { status: response.status, headers: response.headers, messages, text };
  }

  const rpc = (method: string, params: Record<string, unknown>, id = 1) =>
    JSON.stringify({ jsonrpc: '2.0', id, method, params });

  async function storedView(messageId: string, token = alice): Promise<DeliberationView> {
    const { status, body } = await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`, {
      token,
    });
    expect(status).toBe(200);
    return body;
  }

  async function waitForStatus(messageId: string, wanted: string, token = alice): Promise<DeliberationView> {
    for (let i = 0; i < 200; i++) {
      const view = await storedView(messageId, token);
      if (view.status === wanted) return view;
      await sleep(50);
    }
    throw new Error(`deliberation ${messageId} never reached ${wanted}`);
  }

  beforeAll(async () => {
    await stack.start();
    alice = await stack.createUser('alice');
    bob = await stack.createUser('bob');
    carol = await stack.createUser('carol');
    aliceClient = await connect(alice);
    bobClient = await connect(bob);
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await stack.stop();
  });

  it('lists the six tools with input and output schemas, annotations and guidance', async () => {
    const { tools } = await aliceClient.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'deliberate',
      'start_deliberation',
      'get_deliberation',
      'cancel_deliberation',
      'list_modes',
      'list_models',
    ]);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect(tool.title).toEqual(expect.any(String));
      expect(tool.description?.length).toBeGreaterThan(40);
    }
    // The request schema is the HTTP API's: its fields, bounds and the operator's defaults.
    const input = byName.deliberate.inputSchema as { properties: Record<string, Record<string, unknown>> };
    expect(Object.keys(input.properties)).toEqual(
      expect.arrayContaining(['question', 'mode', 'modeConfig', 'conversationId', 'idempotencyKey']),
    );
    expect(input.properties.question.maxLength).toBe(QUESTION_MAX_LENGTH);
    expect(input.properties.mode.enum).toEqual([...MODE_NAMES]);
    expect(JSON.stringify(input.properties.modeConfig)).toContain('sim/athena');
    // deliberate also takes how long to wait (under the SDK's 60 s by default); start_deliberation does not wait.
    const { waitSeconds, ...startInput } = input.properties;
    expect(waitSeconds).toMatchObject({ type: 'integer', minimum: 0, maximum: 600, default: 45 });
    expect(byName.start_deliberation.inputSchema.properties).toEqual(startInput);
    expect(byName.get_deliberation.outputSchema).toEqual(byName.deliberate.outputSchema);
    expect(byName.cancel_deliberation.outputSchema).toEqual(byName.deliberate.outputSchema);
    // When to wait and when to poll, and the one rule for what stops a run.
    expect(byName.deliberate.description).toContain('get_deliberation');
    expect(byName.start_deliberation.description).toContain('get_deliberation');
    for (const name of ['deliberate', 'start_deliberation', 'get_deliberation'])
      expect(byName[name].description).toContain(
        'except by cancel_deliberation (or a stop from the web client',
      );
    expect(aliceClient.getInstructions()).toContain('except by cancel_deliberation');

    for (const name of ['list_modes', 'list_models', 'get_deliberation']) {
      expect(byName[name].annotations).toMatchObject({ readOnlyHint: true });
    }
    for (const name of ['deliberate', 'start_deliberation']) {
      expect(byName[name].annotations).toMatchObject({
        readOnlyHint: false,
        idempotentHint: false,
        openWorldHint: true,
      });
    }
    expect(byName.cancel_deliberation.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
  });

  it('list_modes and list_models answer what GET /api/modes and GET /api/models do', async () => {
    const modes = await aliceClient.callTool({ name: 'list_modes', arguments: {} });
    expect(modes.isError).toBeFalsy();
    const api = await stack.api('GET', '/api/modes', { token: alice });
    expect(modes.structuredContent).toEqual({ modes: api.body });
    expect(textOf(modes as CallToolResult)).toContain('delphi');

    const models = await aliceClient.callTool({ name: 'list_models', arguments: {} });
    const apiModels = await stack.api<{ models: { id: string }[] }>('GET', '/api/models', { token: alice });
    expect(models.structuredContent).toEqual(apiModels.body);
    expect(textOf(models as CallToolResult)).toContain('sim/athena');

    const narrowed = await aliceClient.callTool({ name: 'list_models', arguments: { search: 'ATHENA' } });
    const ids = (narrowed.structuredContent as { models: { id: string }[] }).models.map((m) => m.id);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) expect(id.toLowerCase()).toContain('athena');
  });

  it.each(MODE_NAMES)(
    'deliberate runs %s to the end: final text as stored, structured result, transcript link',
    async (mode) => {
      const result = (await aliceClient.callTool({
        name: 'deliberate',
        arguments: REQUESTS[mode],
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      const outcome = outcomeOf(result);
      expect(outcome).toMatchObject({ mode, status: 'complete', partial: false, failures: [] });
      const view = await storedView(outcome.messageId);
      expect(view.status).toBe('complete');
      expect(outcome.finalText).toEqual(expect.any(String));
      expect(outcome.finalText).toBe(finalTextOf(view));
      expect(outcome.panelists.length).toBeGreaterThanOrEqual(3);
      expect(outcome.links.transcript).toBe(`conclave://deliberations/${outcome.messageId}`);
      expect(outcome.links.web).toBe(`${stack.baseUrl}/#/m/${outcome.messageId}`);
      // The text stays short and carries the answer; the transcript is a linked resource.
      expect(textOf(result)).toContain((outcome.finalText ?? '').slice(0, 40));
      expect(textOf(result).length).toBeLessThan(8000);
      expect(linkOf(result)).toMatchObject({ uri: outcome.links.transcript, mimeType: 'text/markdown' });
      const transcript = await aliceClient.readResource({ uri: outcome.links.transcript });
      expect(transcript.contents[0]).toMatchObject({
        uri: outcome.links.transcript,
        mimeType: 'text/markdown',
      });
      const asked =
        mode === 'jury' ? (REQUESTS.jury.modeConfig as { content: string }).content : REQUESTS[mode].question;
      expect(resourceText(transcript.contents[0])).toContain(String(asked));
      expect(resourceText(transcript.contents[0])).toContain(outcome.messageId);
    },
  );

  it('sends progress per stage and per model call when asked, with increasing progress', async () => {
    const updates: Progress[] = [];
    const result = (await aliceClient.callTool(
      {
        name: 'deliberate',
        arguments: { question: 'Progress?', councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'] },
      },
      undefined,
      { onprogress: (p) => updates.push(p) },
    )) as CallToolResult;
    const outcome = outcomeOf(result);
    expect(outcome.status).toBe('complete');
    const messages = updates.map((u) => u.message ?? '');
    expect(messages[0]).toContain(`started deliberation ${outcome.messageId}`);
    expect(messages).toContain('stage1 started');
    expect(messages).toEqual(
      expect.arrayContaining([expect.stringMatching(/^stage1: sim\/athena answered \([123]\/3\)$/)]),
    );
    expect(messages).toEqual(
      expect.arrayContaining([expect.stringMatching(/^stage2: sim\/hermes answered/)]),
    );
    expect(messages).toContain('stage3 complete: synthesis by sim/chairman');
    for (let i = 1; i < updates.length; i++)
      expect(updates[i].progress).toBeGreaterThan(updates[i - 1].progress);
    // 3 answers, 3 rankings, 1 synthesis (the plan's calls, all settled), then the end.
    expect(updates.at(-1)).toEqual({ progress: 8, total: 8, message: 'complete' });
  });

  it('finishes a run longer than the client timeout because progress resets it; a timed-out call leaves its run going', async () => {
    const slow = { question: 'Slow?', councilModels: ['sim/athena:delay3500', 'sim/hermes', 'sim/apollo'] };
    // Without resetting on progress the client gives up after its timeout (and sends
    // notifications/cancelled): that ends the call, not the deliberation, which completes.
    let timedOutId = '';
    await expect(
      aliceClient.callTool({ name: 'deliberate', arguments: slow }, undefined, {
        timeout: 2000,
        onprogress: (p) => {
          timedOutId ||= /started deliberation (\S+?);/.exec(p.message ?? '')?.[1] ?? '';
        },
      }),
    ).rejects.toMatchObject({ code: ErrorCode.RequestTimeout });
    expect(timedOutId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await storedView(timedOutId)).status).toBe('running');
    const resumed = outcomeOf(
      (await aliceClient.callTool({
        name: 'get_deliberation',
        arguments: { messageId: timedOutId, waitSeconds: 30 },
      })) as CallToolResult,
    );
    expect(resumed).toMatchObject({ status: 'complete', partial: false });
    expect(resumed.finalText).toBe(finalTextOf(await storedView(timedOutId)));

    const updates: Progress[] = [];
    const result = (await aliceClient.callTool({ name: 'deliberate', arguments: slow }, undefined, {
      timeout: 2000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => updates.push(p),
    })) as CallToolResult;
    expect(outcomeOf(result).status).toBe('complete');
    // Heartbeats name whom the run waits for while the slow model thinks.
    expect(updates.map((u) => u.message)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^still deliberating \(\d+ s\): stage1 waiting for sim\/athena:delay3500$/),
      ]),
    );
  });

  it('a client cancelling its call leaves the deliberation running; cancel_deliberation stops it', async () => {
    const controller = new AbortController();
    let messageId = '';
    let opening = '';
    const call = aliceClient.callTool(
      {
        name: 'deliberate',
        arguments: {
          question: 'Cancel me',
          councilModels: ['sim/athena:delay20000', 'sim/hermes', 'sim/apollo'],
        },
      },
      undefined,
      {
        signal: controller.signal,
        onprogress: (p) => {
          opening ||= p.message ?? '';
          messageId ||= /started deliberation (\S+?);/.exec(p.message ?? '')?.[1] ?? '';
          if (messageId) controller.abort('the user stopped waiting');
        },
      },
    );
    await expect(call).rejects.toThrow();
    expect(messageId).toMatch(/^[0-9a-f-]{36}$/);
    // What the first notification promised holds.
    expect(opening).toContain('get_deliberation with this messageId resumes it');
    expect(opening).toContain('except by cancel_deliberation');
    // Before this change the cancellation stopped the run within milliseconds.
    await sleep(2000);
    expect((await storedView(messageId)).status).toBe('running');
    const got = (await aliceClient.callTool({
      name: 'get_deliberation',
      arguments: { messageId },
    })) as CallToolResult;
    expect(outcomeOf(got)).toMatchObject({ status: 'running', finalText: null });
    expect(outcomeOf(got).running?.stages[0]).toMatchObject({
      stage: 'stage1',
      answered: expect.arrayContaining(['sim/hermes', 'sim/apollo']),
    });

    const cancelled = (await aliceClient.callTool({
      name: 'cancel_deliberation',
      arguments: { messageId },
    })) as CallToolResult;
    expect(outcomeOf(cancelled)).toMatchObject({ status: 'cancelled', partial: true, finalText: null });
    expect(outcomeOf(cancelled).running).toBeUndefined();
    expect((await waitForStatus(messageId, 'cancelled')).error).toBe('Cancelled by the user.');
  });

  it('says plainly when a panelist failed, and that enough answered', async () => {
    const result = (await aliceClient.callTool({
      name: 'deliberate',
      arguments: { question: 'Partial?', councilModels: ['sim/athena', 'sim/hermes', 'sim/x:fail'] },
    })) as CallToolResult;
    const outcome = outcomeOf(result);
    expect(outcome).toMatchObject({ status: 'complete', partial: true, enoughAnswered: true });
    expect(outcome.failures).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          model: 'sim/x:fail',
          stage: expect.any(String),
          error: expect.any(String),
        }),
      ]),
    );
    expect(outcome.panelists.find((p) => p.model === 'sim/x:fail')?.failed).toBe(true);
    expect(outcome.finalText).toBe(finalTextOf(await storedView(outcome.messageId)));
    expect(textOf(result)).toContain('sim/x:fail');
  });

  it('never presents a failed chairman as a synthesis', async () => {
    const result = (await aliceClient.callTool({
      name: 'deliberate',
      arguments: {
        question: 'No chair?',
        councilModels: ['sim/athena', 'sim/hermes'],
        chairmanModel: 'sim/chair:fail',
      },
    })) as CallToolResult;
    const outcome = outcomeOf(result);
    expect(outcome.status).toBe('failed');
    expect(outcome.finalText).toBeNull();
    expect(outcome.partial).toBe(true);
    expect(outcome.finalAuthor).toMatchObject({ role: 'chairman', model: 'sim/chair:fail', failed: true });
    expect(textOf(result)).not.toMatch(/synthesis:/i);
    expect(textOf(result)).toContain('sim/chair:fail');
  });

  it('grades a deliberation whose arguments carry an expected answer, as the REST view does (issue 37)', async () => {
    const result = (await aliceClient.callTool({
      name: 'deliberate',
      arguments: {
        question: 'What is 6 times 7?',
        councilModels: ['sim/athena:acc100', 'sim/hermes:acc0'],
        chairmanModel: 'sim/chair:keep:acc100',
        expected: '42',
        grader: { type: 'numeric' },
      },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    const outcome = outcomeOf(result) as Outcome & { grades?: DeliberationView['grades'] };
    expect(outcome.status).toBe('complete');
    const byModel = Object.fromEntries(
      (outcome.grades?.answers ?? []).map((a) => [`${a.stageType} ${a.model}`, a.grade.verdict]),
    );
    expect(byModel).toEqual({
      'stage1 sim/athena:acc100': 'correct',
      'stage1 sim/hermes:acc0': 'incorrect',
      'stage3 sim/chair:keep:acc100': 'correct',
    });
    expect(outcome.grades?.final).toMatchObject({
      stageType: 'stage3',
      role: 'chairman',
      grade: { verdict: 'correct', extracted: '42', grader: 'numeric' },
    });
    // The same grades as the deliberation's REST view (the rows' stored grades, never recomputed).
    const view = await storedView(outcome.messageId);
    const key = (a: { stageType: string; model: string | null }) => `${a.stageType} ${a.model}`;
    const sorted = <T extends { stageType: string; model: string | null }>(list: T[] = []) =>
      [...list].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sorted(outcome.grades?.answers)).toEqual(sorted(view.grades?.answers));
    expect(outcome.grades?.final).toEqual(view.grades?.final);

    // Ungraded: no grades at all.
    const plain = outcomeOf(
      (await aliceClient.callTool({
        name: 'deliberate',
        arguments: { question: 'What is 6 times 7?', councilModels: ['sim/athena:acc100', 'sim/hermes'] },
      })) as CallToolResult,
    ) as Outcome & { grades?: unknown };
    expect(plain.status).toBe('complete');
    expect(plain.grades).toBeUndefined();

    // A bad expected answer for its grader is a tool error naming the field.
    const bad = (await aliceClient.callTool({
      name: 'deliberate',
      arguments: { question: 'What is 6 times 7?', expected: 'forty-two', grader: { type: 'numeric' } },
    })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/- expected: for a numeric grader, expected must be a number/);
  });

  it('answers bad arguments with a tool error naming each field', async () => {
    const bad = (await aliceClient.callTool({
      name: 'deliberate',
      arguments: {
        question: '   ',
        mode: 'council',
        modeConfig: { councilModels: ['not a model'] },
        frob: 1,
      },
    })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    const text = textOf(bad);
    expect(text).toMatch(/- question: /);
    expect(text).toMatch(/- modeConfig\.councilModels/);
    expect(text).toMatch(/- frob: property frob should not exist/);

    const mode = (await aliceClient.callTool({
      name: 'start_deliberation',
      arguments: { question: 'x', mode: 'poll' },
    })) as CallToolResult;
    expect(mode.isError).toBe(true);
    expect(textOf(mode)).toMatch(/- mode: /);

    const missing = (await aliceClient.callTool({
      name: 'get_deliberation',
      arguments: { id: 'x' },
    })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/- id: unknown argument/);
    const noId = (await aliceClient.callTool({
      name: 'cancel_deliberation',
      arguments: {},
    })) as CallToolResult;
    expect(textOf(noId)).toMatch(/- messageId: messageId is required/);
    const wait = (await aliceClient.callTool({
      name: 'get_deliberation',
      arguments: { messageId: '00000000-0000-4000-8000-000000000000', waitSeconds: 5000 },
    })) as CallToolResult;
    expect(textOf(wait)).toMatch(/- waitSeconds: /);
    const key = (await aliceClient.callTool({
      name: 'deliberate',
      arguments: { question: 'x', idempotencyKey: 'a b' },
    })) as CallToolResult;
    expect(textOf(key)).toMatch(/- idempotencyKey: /);
  });

  it('starts, polls, waits for and cancels long runs with start/get/cancel', async () => {
    const started = (await aliceClient.callTool({
      name: 'start_deliberation',
      arguments: { question: 'Long?', councilModels: ['sim/athena:delay800', 'sim/hermes', 'sim/apollo'] },
    })) as CallToolResult;
    expect(started.isError).toBeFalsy();
    const { messageId, status, transcript, web } = started.structuredContent as Record<string, string>;
    expect(['queued', 'running']).toContain(status);
    expect(transcript).toBe(`conclave://deliberations/${messageId}`);
    expect(web).toBe(`${stack.baseUrl}/#/m/${messageId}`);

    const polled = outcomeOf(
      (await aliceClient.callTool({ name: 'get_deliberation', arguments: { messageId } })) as CallToolResult,
    );
    expect(['queued', 'running']).toContain(polled.status);
    expect(polled.finalText).toBeNull();

    const updates: Progress[] = [];
    const waited = (await aliceClient.callTool(
      { name: 'get_deliberation', arguments: { messageId, waitSeconds: 60 } },
      undefined,
      { onprogress: (p) => updates.push(p) },
    )) as CallToolResult;
    expect(outcomeOf(waited).status).toBe('complete');
    expect(outcomeOf(waited).finalText).toBe(finalTextOf(await storedView(messageId)));
    expect(updates.length).toBeGreaterThan(0);

    // Cancelling one that has ended changes nothing (idempotent), and says so.
    const again = (await aliceClient.callTool({
      name: 'cancel_deliberation',
      arguments: { messageId },
    })) as CallToolResult;
    expect(again.isError).toBeFalsy();
    expect(outcomeOf(again).status).toBe('complete');
    expect(textOf(again)).toContain('already ended');

    const slow = (await aliceClient.callTool({
      name: 'start_deliberation',
      arguments: { question: 'Stop?', councilModels: ['sim/athena:delay20000', 'sim/hermes', 'sim/apollo'] },
    })) as CallToolResult;
    const slowId = (slow.structuredContent as { messageId: string }).messageId;
    const cancelled = (await aliceClient.callTool({
      name: 'cancel_deliberation',
      arguments: { messageId: slowId },
    })) as CallToolResult;
    expect(outcomeOf(cancelled)).toMatchObject({ status: 'cancelled', partial: true });
    expect((await storedView(slowId)).status).toBe('cancelled');
  });

  it('answers the same deliberation for the same idempotency key', async () => {
    const args = { question: 'Once?', idempotencyKey: 'mcp-once-1' };
    const first = outcomeOf(
      (await aliceClient.callTool({ name: 'deliberate', arguments: args })) as CallToolResult,
    );
    const second = outcomeOf(
      (await aliceClient.callTool({ name: 'deliberate', arguments: args })) as CallToolResult,
    );
    expect(second.messageId).toBe(first.messageId);
    expect(second.status).toBe('complete');
  });

  // The two below run side by side (and before the rest of the file): the first takes over a minute.
  it.concurrent(
    "a council longer than 60 s with the SDK's default options: deliberate answers in time, the run goes on, get_deliberation fetches it",
    async () => {
      const client = await connect(carol);
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
      const answeredAfter = Date.now() - began;
      expect(answeredAfter).toBeGreaterThanOrEqual(44_000);
      expect(answeredAfter).toBeLessThan(60_000);
      expect(first.isError).toBeFalsy();
      const running = outcomeOf(first);
      const { messageId } = running;
      expect(running).toMatchObject({ status: 'running', finalText: null });
      expect(running.running).toEqual({
        stage: 'stage2',
        waitedSeconds: expect.any(Number),
        stages: [{ stage: 'stage1', answered: expect.arrayContaining(members), failed: [] }],
        next: { tool: 'get_deliberation', arguments: { messageId, waitSeconds: 45 } },
      });
      expect(running.running?.waitedSeconds).toBeGreaterThanOrEqual(44);
      const said = textOf(first);
      expect(said).toMatch(
        new RegExp(`^Deliberation ${messageId} is still running \\(council, at stage2\\)`),
      );
      expect(said).toContain('- stage1: 2 answered (sim/a:delay25000, sim/b:delay25000)');
      expect(said).toContain(`call get_deliberation with messageId "${messageId}" and waitSeconds 45`);
      expect(said).toContain('except by cancel_deliberation');
      // Not cancelled: it goes on, and the next call fetches its end.
      expect((await storedView(messageId, carol)).status).toBe('running');
      const next = (await client.callTool({
        name: 'get_deliberation',
        arguments: running.running?.next.arguments,
      })) as CallToolResult;
      expect(Date.now() - began).toBeGreaterThan(60_000);
      const done = outcomeOf(next);
      expect(done).toMatchObject({ messageId, status: 'complete', partial: false, failures: [] });
      expect(done.running).toBeUndefined();
      expect(done.finalText).toBe(finalTextOf(await storedView(messageId, carol)));
      expect(textOf(next)).not.toContain('still running');
    },
    150_000,
  );

  it.concurrent(
    'reattaches a repeated call with the same idempotencyKey to the same run, running or ended',
    async () => {
      const client = await connect(carol);
      const args = {
        question: 'Retry me?',
        councilModels: ['sim/athena:delay2500', 'sim/hermes'],
        idempotencyKey: 'mcp-retry-1',
      };
      const started = (await client.callTool({
        name: 'start_deliberation',
        arguments: args,
      })) as CallToolResult;
      const { messageId } = started.structuredContent as { messageId: string };
      expect(textOf(started)).toMatch(/^Started a council deliberation/);
      // The retry of a cut-off deliberate (a wait of its own) waits for the same run.
      const updates: Progress[] = [];
      const retried = (await client.callTool(
        { name: 'deliberate', arguments: { ...args, waitSeconds: 30 } },
        undefined,
        { onprogress: (p) => updates.push(p) },
      )) as CallToolResult;
      expect(outcomeOf(retried)).toMatchObject({ messageId, status: 'complete' });
      expect(updates[0].message).toMatch(
        new RegExp(`^rejoined deliberation ${messageId} \\(started earlier with this idempotencyKey\\)`),
      );
      // Once ended, the same key answers the same run at once, from either tool.
      const again = (await client.callTool({
        name: 'start_deliberation',
        arguments: args,
      })) as CallToolResult;
      expect(again.structuredContent).toMatchObject({ messageId, status: 'complete' });
      expect(textOf(again)).toMatch(
        /^An earlier call with this idempotencyKey started this council deliberation/,
      );
      const ended = outcomeOf(
        (await client.callTool({ name: 'deliberate', arguments: args })) as CallToolResult,
      );
      expect(ended).toMatchObject({ messageId, status: 'complete' });
      // The same key with other arguments is refused, naming why.
      const other = (await client.callTool({
        name: 'deliberate',
        arguments: { ...args, question: 'Something else?' },
      })) as CallToolResult;
      expect(other.isError).toBe(true);
      expect(textOf(other)).toBe(
        'Invalid arguments:\n- idempotencyKey: this idempotencyKey was already used with other arguments; ' +
          'use a new key for a new deliberation',
      );
    },
    60_000,
  );

  it("keeps each key to its own deliberations: get, cancel and the transcript of another's answer not found", async () => {
    const started = (await aliceClient.callTool({
      name: 'start_deliberation',
      arguments: {
        question: 'Private?',
        councilModels: ['sim/athena:delay20000', 'sim/hermes', 'sim/apollo'],
      },
    })) as CallToolResult;
    const messageId = (started.structuredContent as { messageId: string }).messageId;

    for (const name of ['get_deliberation', 'cancel_deliberation']) {
      const result = (await bobClient.callTool({ name, arguments: { messageId } })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^no deliberation /);
      expect(textOf(result)).not.toContain('Private?');
    }
    await expect(
      bobClient.readResource({ uri: `conclave://deliberations/${messageId}` }),
    ).rejects.toMatchObject({
      code: -32002,
    });
    // Alice's listing names it (newest first, titled by its conversation's title, else its question);
    // Bob's does not.
    const uri = `conclave://deliberations/${messageId}`;
    const listed = await aliceClient.listResources();
    expect(listed.resources[0]).toMatchObject({
      uri,
      name: `deliberation-${messageId}`,
      title: expect.stringMatching(/Private/),
      mimeType: 'text/markdown',
      description: expect.stringMatching(/^council, (queued|running), started \d{4}-/),
    });
    expect((await bobClient.listResources()).resources.map((r) => r.uri)).not.toContain(uri);
    expect(JSON.stringify(await bobClient.listResources())).not.toContain('Private');
    // Bob's cancellation stopped nothing.
    expect((await storedView(messageId)).status).not.toBe('cancelled');
    const unknown = (await aliceClient.callTool({
      name: 'get_deliberation',
      arguments: { messageId: '00000000-0000-4000-8000-000000000000' },
    })) as CallToolResult;
    expect(textOf(unknown)).toMatch(/^no deliberation 00000000-/);
    for (const uri of ['conclave://deliberations/nope', 'conclave://other/1', 'file:///etc/passwd']) {
      await expect(aliceClient.readResource({ uri })).rejects.toMatchObject({ code: -32002 });
    }
    await aliceClient.callTool({ name: 'cancel_deliberation', arguments: { messageId } });
  });

  it("is stateless across replicas: any gateway answers, and a cancellation sent to another ends the call's wait, not its run", async () => {
    const second = await stack.spawnGateway({ MCP_PROGRESS_INTERVAL_MS: String(PROGRESS_INTERVAL_MS) });
    try {
      // Every request but the tools/call itself goes to the second replica.
      const routed: string[] = [];
      const fetchVia: typeof fetch = (input, init) => {
        const body = typeof init?.body === 'string' ? init.body : '';
        const toFirst = body.includes('"tools/call"');
        routed.push(
          `${toFirst ? 'first' : 'second'} ${/"method":"([^"]+)"/.exec(body)?.[1] ?? init?.method}`,
        );
        const url = toFirst ? String(input) : String(input).replace(stack.baseUrl, second.baseUrl);
        return fetch(url, init);
      };
      const client = new Client({ name: 'two-replicas', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${alice}` } },
          fetch: fetchVia,
        }),
      );
      clients.push(client);
      expect((await client.listTools()).tools).toHaveLength(6);
      const listed = await client.callTool({ name: 'list_modes', arguments: {} });
      expect(listed.isError).toBeFalsy();
      expect(routed).toEqual(
        expect.arrayContaining(['second initialize', 'second tools/list', 'first tools/call']),
      );

      // The same by hand, to see when the first replica answers: a tools/call that would wait 30 s,
      // and its cancellation sent to the second replica.
      const initialize = await post(
        rpc('initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        }),
        { token: alice, baseUrl: second.baseUrl },
      );
      const session = initialize.headers.get('mcp-session-id') ?? '';
      expect(session).not.toBe('');
      const headers = { 'mcp-session-id': session };
      const began = Date.now();
      const call = post(
        rpc(
          'tools/call',
          {
            name: 'deliberate',
            arguments: {
              question: 'Two replicas',
              councilModels: ['sim/athena:delay20000', 'sim/hermes', 'sim/apollo'],
              waitSeconds: 30,
            },
          },
          42,
        ),
        { token: alice, headers },
      );
      await sleep(1500);
      const cancel = await post(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 42, reason: 'timed out' },
        }),
        { token: alice, headers, baseUrl: second.baseUrl },
      );
      expect(cancel.status).toBe(202);
      const answer = await call;
      // It stopped waiting within about a second of the cancellation, far from its 30 s.
      expect(Date.now() - began).toBeLessThan(10_000);
      const result = answer.messages.find((m) => m.id === 42)?.result as CallToolResult;
      const outcome = outcomeOf(result);
      expect(outcome.status).toBe('running');
      expect(outcome.running?.next).toEqual({
        tool: 'get_deliberation',
        arguments: { messageId: outcome.messageId, waitSeconds: 30 },
      });
      // The run goes on until cancel_deliberation stops it.
      await sleep(1000);
      expect((await storedView(outcome.messageId)).status).toBe('running');
      await aliceClient.callTool({
        name: 'cancel_deliberation',
        arguments: { messageId: outcome.messageId },
      });
      expect((await waitForStatus(outcome.messageId, 'cancelled')).error).toBe('Cancelled by the user.');
    } finally {
      second.child.kill('SIGTERM');
    }
    // A second gateway process starts from the TypeScript sources: slow on a busy machine.
  }, 180_000);

  it('refuses a missing or wrong key with 401 and WWW-Authenticate: Bearer', async () => {
    const initialize = rpc('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    for (const token of [undefined, 'ck_wrong']) {
      const answer = await post(initialize, { token });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
      expect(answer.text).toContain('API key');
    }
    const client = new Client({ name: 'no-key', version: '1' });
    const error: unknown = await client
      .connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`)))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(401);
  });

  it('answers hostile input with clear 4xx or tool errors, never a 5xx', async () => {
    const call = (args: unknown, name = 'deliberate', id = 7) =>
      rpc('tools/call', { name, arguments: args }, id);
    const check = async (body: string, headers?: Record<string, string>) => {
      const answer = await post(body, { token: alice, headers });
      expect(answer.status).toBeLessThan(500);
      return answer;
    };

    expect((await check('{"jsonrpc": "2.0", "id": 1, "method": ')).status).toBe(400);
    const notRpc = await check('{"hello": "world"}');
    expect(notRpc.status).toBe(400);
    expect(notRpc.messages[0]).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
    expect(
      (await check(`{"jsonrpc":"2.0","id":1,"method":"tools/list","pad":"${'x'.repeat(300_000)}"}`)).status,
    ).toBe(413);
    expect((await check(rpc('tools/list', {}), { 'content-type': 'text/plain' })).status).toBe(415);

    // Arguments that are not an object, an unknown tool, an unknown method: JSON-RPC errors.
    const notObject = await check(call('question?'));
    expect(notObject.messages[0]).toMatchObject({ id: 7, error: { code: ErrorCode.InvalidParams } });
    const unknownTool = await check(call({}, 'drop_tables'));
    expect(unknownTool.messages[0]).toMatchObject({
      error: { code: ErrorCode.InvalidParams, message: expect.stringContaining('Unknown tool: drop_tables') },
    });
    const unknownMethod = await check(rpc('sampling/doSomething', {}));
    expect(unknownMethod.messages[0]).toMatchObject({ error: { code: ErrorCode.MethodNotFound } });

    // Arguments the API refuses: tool errors naming the field.
    const toolError = async (args: unknown, field: RegExp) => {
      const answer = await check(call(args));
      expect(answer.status).toBe(200);
      const result = answer.messages.find((m) => m.id === 7)?.result as CallToolResult;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(field);
    };
    await toolError(
      { question: 'x'.repeat(QUESTION_MAX_LENGTH + 1) },
      /- question: question must be at most/,
    );
    let nested: unknown = 'deep';
    for (let i = 0; i < 2000; i++) nested = [nested];
    await toolError({ question: 'x', modeConfig: nested }, /- body: /);
    // Keys that would reach the prototype chain: refused by the protocol's own check of the
    // arguments (InvalidParams), named by the tool like any other unknown field, or dropped by the
    // protocol layer without effect (a `__proto__` whose fields would otherwise be read through it).
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const answer = await check(
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deliberate",' +
          `"arguments":{"question":"smuggled?","${key}":{"mode":"jury","councilModels":["bad"]}}}}`,
      );
      expect(answer.status).toBe(200);
      const [message] = answer.messages;
      if ('error' in message) {
        expect(message).toMatchObject({ id: 7, error: { code: ErrorCode.InvalidParams } });
        continue;
      }
      const result = message.result as CallToolResult;
      if (result.isError) expect(textOf(result)).toContain(`- ${key}: property ${key} should not exist`);
      else expect(outcomeOf(result)).toMatchObject({ mode: 'council', status: 'complete' });
    }
    await toolError({ question: 'x\u0000y' }, /- question: question must not contain NUL/);
    // A cross-site page may not drive /mcp; other methods than POST are not offered.
    expect((await check(rpc('tools/list', {}), { origin: 'https://evil.example' })).status).toBe(403);
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${stack.baseUrl}/mcp`, {
        method,
        headers: { authorization: `Bearer ${alice}` },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
    }
  });
});

describe('MCP in single-user mode (AUTH_MODE=none)', () => {
  const stack = new TestStack({ AUTH_MODE: 'none' });
  let client: Client | null = null;

  beforeAll(() => stack.start());
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stack.stop();
  });

  /** A POST with the Host header a page on another site would send after DNS rebinding. */
  const postWithHost = (host: string, body: string) =>
    new Promise<number>((resolve, reject) => {
      const url = new URL(`${stack.baseUrl}/mcp`);
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: '/mcp',
          method: 'POST',
          headers: {
            host,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('needs no key, and keeps the host and origin rules of the rest of the gateway', async () => {
    client = new Client({ name: 'local', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`)));
    await client.listTools();
    const result = (await client.callTool({
      name: 'deliberate',
      arguments: { question: 'Local?' },
    })) as CallToolResult;
    expect(outcomeOf(result).status).toBe('complete');

    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    expect(await postWithHost('evil.example', list)).toBe(403);
    expect(await postWithHost(new URL(stack.baseUrl).host, list)).toBe(200);
    const fromSite = async (origin: string) =>
      (
        await fetch(`${stack.baseUrl}/mcp`, {
          method: 'POST',
          headers: {
            origin,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: list,
        })
      ).status;
    expect(await fromSite('https://evil.example')).toBe(403);
    expect(await fromSite(stack.baseUrl)).toBe(200);
  });
});

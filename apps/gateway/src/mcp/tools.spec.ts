import type { DeliberationView, ModelsResponse } from '@conclave/contracts';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { CallToolResult, TextContent } from '@modelcontextprotocol/sdk/types.js';
import { viewOf } from '../../../../libs/outcomes/src/fixtures/views';
import { ApiError } from '../common/api-error';
import { RateLimited } from '../common/rate-limiter';
import { deliberationRequestSchema } from '../deliberations/request-schema';
import {
  DELIBERATE_WAIT_SECONDS,
  errorResult,
  fieldErrorText,
  settledByStage,
  STOP_RULE,
  ToolTable,
  TOOL_NAMES,
  type CallContext,
  type RunningState,
  type ToolBackend,
} from './tools';

const DEFAULTS = {
  timeoutMs: 120_000,
  council: { councilModels: ['sim/athena', 'sim/hermes'], chairmanModel: 'sim/chairman' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b', 'sim/c'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};

const textOf = (result: CallToolResult): string =>
  result.content
    .filter((c): c is TextContent => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

const MODELS: ModelsResponse = {
  models: [
    { id: 'sim/athena', provider: 'simulated', name: 'Athena' },
    { id: 'sim/hermes', provider: 'simulated', name: 'Hermes' },
    { id: 'openai/gpt-4o', provider: 'openrouter', name: 'GPT-4o', contextLength: 128000 },
  ],
  sources: [{ provider: 'simulated', configured: true, fetchedAt: null, count: 2, error: null }],
  directives: [{ syntax: ':fail[@kind]', effect: 'the call fails', example: 'sim/a:fail' }],
  promptKinds: ['answer'],
};

/** The gateway's services as plain functions: what a test changes is said where it is. */
function backend(overrides: Partial<ToolBackend> = {}): ToolBackend & { logged: string[] } {
  const logged: string[] = [];
  return {
    logged,
    start: () => Promise.reject(new Error('not in this test')),
    view: () => Promise.reject(ApiError.notFound('deliberation x')),
    cancel: () => Promise.resolve(),
    follow: () => Promise.resolve(),
    stageOf: () => Promise.resolve('stage2'),
    plannedCalls: () => Promise.resolve(null),
    modes: () => [],
    models: () => Promise.resolve(MODELS),
    logError: (what, error) => logged.push(`${what}: ${String(error)}`),
    isUnavailable: () => false,
    ...overrides,
  };
}

const context = (): CallContext => ({
  userId: 'u1',
  webBase: 'http://localhost:3000',
  notify: null,
  progressIntervalMs: 5000,
  stop: new AbortController().signal,
  holdStream: () => () => undefined,
  now: () => 0,
});

const table = new ToolTable(DEFAULTS);

describe('the MCP tool table', () => {
  const definitions = table.definitions;
  const byName = Object.fromEntries(definitions.map((d) => [d.name, d]));

  it('lists each tool once, in order, with schemas every MCP client can compile', () => {
    expect(definitions.map((d) => d.name)).toEqual([...TOOL_NAMES]);
    const validator = new AjvJsonSchemaValidator();
    for (const definition of definitions) {
      expect(() => validator.getValidator(definition.inputSchema)).not.toThrow();
      expect(() => validator.getValidator(definition.outputSchema ?? {})).not.toThrow();
    }
  });

  it("takes deliberate's arguments from the HTTP API's request schema, plus an idempotency key and a wait", () => {
    const request = deliberationRequestSchema(DEFAULTS);
    const input = byName.deliberate.inputSchema;
    expect(input.properties).toEqual({
      ...request.properties,
      idempotencyKey: expect.any(Object),
      waitSeconds: expect.objectContaining({ type: 'integer', minimum: 0, maximum: 600, default: 45 }),
    });
    // start_deliberation does not wait.
    expect(byName.start_deliberation.inputSchema.properties).toEqual({
      ...request.properties,
      idempotencyKey: expect.any(Object),
    });
    expect(input.required).toEqual(request.required);
    expect(input.additionalProperties).toBe(false);
    expect(JSON.stringify(input)).toContain('sim/athena');
  });

  it('annotates reading tools as read-only and starting a run as neither read-only nor idempotent', () => {
    for (const name of ['get_deliberation', 'list_modes', 'list_models'])
      expect(byName[name].annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    for (const name of ['deliberate', 'start_deliberation'])
      expect(byName[name].annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      });
    expect(byName.cancel_deliberation.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
  });

  it("validates structured results against the tools' output schemas", async () => {
    const validator = new AjvJsonSchemaValidator();
    const view = viewOf('council-complete');
    const get = await table.call(
      'get_deliberation',
      { messageId: view.messageId },
      context(),
      backend({
        view: () => Promise.resolve(view),
      }),
    );
    expect(get.isError).toBeFalsy();
    expect(
      validator.getValidator(byName.get_deliberation.outputSchema ?? {})(get.structuredContent),
    ).toMatchObject({
      valid: true,
    });
    const models = await table.call('list_models', {}, context(), backend());
    expect(
      validator.getValidator(byName.list_models.outputSchema ?? {})(models.structuredContent),
    ).toMatchObject({
      valid: true,
    });
  });
});

describe('MCP tool errors', () => {
  it('name each field and its problem', () => {
    expect(fieldErrorText({ question: 'Question is required', 'modeConfig.councilModels': 'too few' })).toBe(
      'Invalid arguments:\n- question: Question is required\n- modeConfig.councilModels: too few',
    );
    const invalid = errorResult(ApiError.invalid({ mode: 'mode must be one of …' }), backend(), 'deliberate');
    expect(invalid).toEqual({
      isError: true,
      content: [{ type: 'text', text: 'Invalid arguments:\n- mode: mode must be one of …' }],
    });
  });

  it("pass the API's own messages on, and never an unexpected error's", () => {
    expect(
      textOf(errorResult(new RateLimited('Too many new deliberations: try again in 7 s', 7), backend(), 'x')),
    ).toBe('Too many new deliberations: try again in 7 s');
    const quiet = backend();
    const unexpected = errorResult(
      new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2'),
      quiet,
      'deliberate',
    );
    expect(textOf(unexpected)).toBe('Something went wrong on our side; try again.');
    expect(quiet.logged).toEqual([expect.stringContaining('ECONNREFUSED')]);
    const down = errorResult(new Error('db down'), backend({ isUnavailable: () => true }), 'x');
    expect(textOf(down)).toContain('Storage is unavailable');
  });

  it('come back as results for unknown or malformed arguments, never as a throw', async () => {
    const b = backend();
    const cases: [string, unknown, RegExp][] = [
      [
        'get_deliberation',
        { messageId: 'm', verbose: true },
        /- verbose: unknown argument \(this tool takes: messageId, waitSeconds\)/,
      ],
      ['get_deliberation', {}, /- messageId: messageId is required/],
      ['get_deliberation', { messageId: 42 }, /- messageId: messageId must be/],
      ['get_deliberation', { messageId: 'm', waitSeconds: 1.5 }, /- waitSeconds: /],
      ['list_modes', { all: true }, /- all: unknown argument \(this tool takes: none\)/],
      ['list_models', { provider: 'elsewhere', search: 7 }, /- search: [^]*- provider: /],
      ['deliberate', { question: 'x', idempotencyKey: '' }, /- idempotencyKey: /],
      ['deliberate', ['question'], /expected an object/],
      ['cancel_deliberation', Object.create({ messageId: 'inherited' }) as unknown, /- __proto__: /],
    ];
    for (const [name, args, expected] of cases) {
      const result = await table.call(name as (typeof TOOL_NAMES)[number], args, context(), b);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(expected);
    }
  });

  it("say 'no deliberation' for an id that is not the caller's, whichever tool", async () => {
    const b = backend({ cancel: () => Promise.reject(ApiError.notFound('deliberation m')) });
    for (const name of ['get_deliberation', 'cancel_deliberation'] as const) {
      const result = await table.call(name, { messageId: 'm' }, context(), b);
      expect(result).toMatchObject({ isError: true });
      expect(textOf(result)).toMatch(/^no deliberation m: none of yours has this id/);
    }
  });

  it('cancel an ended deliberation as a no-op that says so', async () => {
    const view = viewOf('council-complete');
    const result = await table.call(
      'cancel_deliberation',
      { messageId: view.messageId },
      context(),
      backend({
        cancel: () => Promise.reject(new ApiError(409, 'already ended')),
        view: () => Promise.resolve(view as DeliberationView),
      }),
    );
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/^It had already ended: nothing was cancelled\./);
    expect(result.structuredContent).toMatchObject({ status: 'complete' });
  });
});

/** A deliberation that does not end while the test runs: follow returns only when the call stops waiting. */
function runningBackend(
  name = 'council-running',
  overrides: Partial<ToolBackend> = {},
): ToolBackend & { logged: string[]; started: unknown[] } {
  const view = viewOf(name);
  const started: unknown[] = [];
  return {
    ...backend({
      start: (_user, body, key) => {
        started.push({ body, key });
        return Promise.resolve({
          messageId: view.messageId,
          conversationId: view.conversationId,
          rejoined: false,
        });
      },
      view: () => Promise.resolve(structuredClone(view)),
      follow: (_id, _onEvent, stop) =>
        new Promise<void>((resolve) => {
          if (stop.aborted) resolve();
          stop.addEventListener('abort', () => resolve(), { once: true });
        }),
      ...overrides,
    }),
    started,
  };
}

const progressContext = (sent: string[], overrides: Partial<CallContext> = {}): CallContext => ({
  ...context(),
  notify: (update) => {
    sent.push(update.message);
    return Promise.resolve();
  },
  ...overrides,
});

describe('deliberate and get_deliberation before the end', () => {
  const validator = new AjvJsonSchemaValidator();
  const byName = Object.fromEntries(table.definitions.map((d) => [d.name, d]));

  it('validate waitSeconds, naming it (and every other bad field) before anything starts', async () => {
    for (const waitSeconds of [-1, 1.5, 601, '30', true]) {
      const b = runningBackend();
      const result = await table.call('deliberate', { question: 'q', waitSeconds }, context(), b);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(
        'Invalid arguments:\n- waitSeconds: waitSeconds must be a whole number of seconds from 0 to 600',
      );
      expect(b.started).toEqual([]);
      const get = await table.call('get_deliberation', { messageId: 'm', waitSeconds }, context(), b);
      expect(textOf(get)).toMatch(/^Invalid arguments:\n- waitSeconds: /);
    }
    const both = await table.call(
      'deliberate',
      { question: 'q', waitSeconds: 9999, idempotencyKey: 'has space' },
      context(),
      runningBackend(),
    );
    expect(textOf(both)).toMatch(/- waitSeconds: [^]*- idempotencyKey: /);
    // waitSeconds is deliberate's own: the request itself never carries it, nor the key.
    const b = runningBackend();
    await table.call('deliberate', { question: 'q', waitSeconds: 0, idempotencyKey: 'k-1' }, context(), b);
    expect(b.started).toEqual([{ body: { question: 'q' }, key: 'k-1' }]);
  });

  it('answer a run that has not ended with where it is, as a result its output schema accepts', async () => {
    const b = runningBackend();
    const started = Date.now();
    const sent: string[] = [];
    const result = await table.call(
      'deliberate',
      { question: 'q', waitSeconds: 1 },
      progressContext(sent, { now: () => Date.now() }),
      b,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as { status: string; running: RunningState };
    expect(structured.status).toBe('running');
    const view = viewOf('council-running');
    expect(structured.running).toEqual({
      stage: 'stage2',
      waitedSeconds: 1,
      stages: [
        { stage: 'stage1', answered: ['sim/athena', 'sim/hermes'], failed: [] },
        { stage: 'stage2', answered: ['sim/athena', 'sim/hermes'], failed: [] },
      ],
      next: { tool: 'get_deliberation', arguments: { messageId: view.messageId, waitSeconds: 1 } },
    });
    expect(validator.getValidator(byName.deliberate.outputSchema ?? {})(structured)).toMatchObject({
      valid: true,
    });
    const answer = textOf(result);
    expect(answer).toMatch(
      new RegExp(
        `^Deliberation ${view.messageId} is still running \\(council, at stage2\\) after 1 s; it goes on\\.`,
      ),
    );
    expect(answer).toContain('- stage1: 2 answered (sim/athena, sim/hermes)');
    expect(answer).toContain(
      `call get_deliberation with messageId "${view.messageId}" and waitSeconds 1, again until its status is complete`,
    );
    expect(answer).toContain(STOP_RULE);
    expect(answer).toContain('No final answer yet');
    // The first progress notification names the run, the wait, and the same rule.
    expect(sent[0]).toBe(
      `started deliberation ${view.messageId}; this call waits up to 1 s for the end, then answers with where ` +
        `it is. If this call is cut off, get_deliberation with this messageId resumes it: ${STOP_RULE}`,
    );
  });

  it('stop waiting, not the deliberation, when the call ends for its client', async () => {
    const cancels: string[] = [];
    const b = runningBackend('council-running', {
      cancel: (_user, id) => {
        cancels.push(id);
        return Promise.resolve();
      },
    });
    const ended = new AbortController();
    setTimeout(() => ended.abort(), 20);
    const result = await table.call('deliberate', { question: 'q' }, { ...context(), stop: ended.signal }, b);
    expect((result.structuredContent as { status: string }).status).toBe('running');
    expect(cancels).toEqual([]);
    // Cancelled before it started anything: nothing is started.
    const early = await table.call('deliberate', { question: 'q' }, { ...context(), stop: ended.signal }, b);
    expect(textOf(early)).toBe('The call was cancelled before it started anything.');
    expect(b.started).toHaveLength(1);
  });

  it('tell get_deliberation to wait next time as long as this call did, or 45 s', async () => {
    const b = runningBackend();
    const now = (await table.call('get_deliberation', { messageId: 'm' }, context(), b))
      .structuredContent as {
      running: RunningState;
    };
    expect(now.running.next.arguments.waitSeconds).toBe(DELIBERATE_WAIT_SECONDS);
    const stopped = new AbortController();
    stopped.abort();
    const waited = (
      await table.call(
        'get_deliberation',
        { messageId: 'm', waitSeconds: 20 },
        { ...context(), stop: stopped.signal },
        b,
      )
    ).structuredContent as { running: RunningState };
    expect(waited.running.next.arguments.waitSeconds).toBe(20);
    // Ended: the outcome alone.
    const done = await table.call(
      'get_deliberation',
      { messageId: 'm' },
      context(),
      backend({ view: () => Promise.resolve(viewOf('council-complete')) }),
    );
    expect(done.structuredContent).not.toHaveProperty('running');
    expect(textOf(done)).not.toContain('still running');
  });

  it('say a rejoined run was started earlier, not by this call', async () => {
    const view = viewOf('council-running');
    const b = runningBackend('council-running', {
      start: () =>
        Promise.resolve({ messageId: view.messageId, conversationId: view.conversationId, rejoined: true }),
    });
    const sent: string[] = [];
    await table.call('deliberate', { question: 'q', idempotencyKey: 'k', waitSeconds: 0 }, context(), b);
    const stopped = new AbortController();
    setTimeout(() => stopped.abort(), 10);
    await table.call(
      'deliberate',
      { question: 'q', idempotencyKey: 'k' },
      progressContext(sent, { stop: stopped.signal }),
      b,
    );
    expect(sent[0]).toMatch(
      new RegExp(`^rejoined deliberation ${view.messageId} \\(started earlier with this idempotencyKey\\)`),
    );
    const start = await table.call(
      'start_deliberation',
      { question: 'q', idempotencyKey: 'k' },
      context(),
      b,
    );
    expect(textOf(start)).toMatch(
      /^An earlier call with this idempotencyKey started this council deliberation/,
    );
  });

  it('name idempotencyKey when it was used before with other arguments', async () => {
    const reused = runningBackend('council-running', {
      start: () =>
        Promise.reject(new ApiError(422, 'This Idempotency-Key was already used with a different request')),
    });
    for (const name of ['deliberate', 'start_deliberation'] as const) {
      const result = await table.call(name, { question: 'other', idempotencyKey: 'k' }, context(), reused);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(
        'Invalid arguments:\n- idempotencyKey: this idempotencyKey was already used with other arguments; ' +
          'use a new key for a new deliberation',
      );
    }
  });

  it('name Delphi panelists only once the exercise is over', () => {
    const running = settledByStage(viewOf('delphi-running'));
    expect(running.find((s) => s.stage === 'round_1')?.answered).toEqual([
      'a panelist',
      'a panelist',
      'a panelist',
    ]);
    const over = settledByStage(viewOf('delphi-complete'));
    expect(over.find((s) => s.stage === 'round_1')?.answered).toEqual(
      expect.arrayContaining(['sim/a', 'sim/b']),
    );
    // A failed panelist's error text may name its model (HTTP 400 from sim/x): only its kind is said.
    const base = viewOf('delphi-running');
    const withFailure = {
      ...base,
      calls: [
        ...base.calls,
        { ...base.calls[0], model: 'sim/secret:fail', ok: false, error: 'HTTP 400 from sim/secret:fail' },
      ],
    };
    const round = settledByStage(withFailure).find((s) => s.stage === base.calls[0].stage);
    expect(round?.failed).toEqual([{ model: 'a panelist', error: 'its call failed' }]);
    expect(JSON.stringify(settledByStage(withFailure))).not.toContain('secret');
    const failed = settledByStage(viewOf('council-failed-panelist'));
    expect(failed[0]).toEqual({
      stage: 'stage1',
      answered: ['sim/apollo', 'sim/athena'],
      failed: [{ model: 'sim/hermes:fail', error: expect.stringContaining('simulated failure') }],
    });
  });

  it('state one rule for what stops a run in every tool that starts, waits for or stops one', () => {
    for (const name of ['deliberate', 'start_deliberation', 'get_deliberation']) {
      expect(byName[name].description).toContain(STOP_RULE);
    }
    expect(STOP_RULE).toMatch(/^No client of yours stops a deliberation except by cancel_deliberation/);
    expect(STOP_RULE).toContain('its API key being revoked');
    for (const definition of table.definitions) {
      // Nothing says a cut-off or cancelled call stops its deliberation.
      expect(definition.description).not.toMatch(/cancell?ing (the|a|this) call (also )?(cancels|stops)/i);
    }
  });
});

describe('list_models', () => {
  it('narrows the catalogue by text and source, and says how many of how many', async () => {
    const result = await table.call(
      'list_models',
      { search: 'GPT', provider: 'openrouter' },
      context(),
      backend(),
    );
    expect((result.structuredContent as unknown as ModelsResponse).models.map((m) => m.id)).toEqual([
      'openai/gpt-4o',
    ]);
    expect(textOf(result)).toMatch(/^1 of 3 models: openai\/gpt-4o/);
    expect(textOf(result)).toContain(':fail[@kind]: the call fails');
  });
});

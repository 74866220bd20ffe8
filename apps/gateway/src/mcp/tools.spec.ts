import type { DeliberationView, ModelsResponse } from '@conclave/contracts';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { CallToolResult, TextContent } from '@modelcontextprotocol/sdk/types.js';
import { viewOf } from '../../../../libs/outcomes/src/fixtures/views';
import { ApiError } from '../common/api-error';
import { RateLimited } from '../common/rate-limiter';
import { deliberationRequestSchema } from '../deliberations/request-schema';
import {
  errorResult,
  fieldErrorText,
  ToolTable,
  TOOL_NAMES,
  type CallContext,
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
  run: {
    cancelledEarly: () => Promise.resolve(false),
    claim: () => Promise.resolve('claimed'),
    release: () => Promise.resolve(),
  },
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

  it("takes deliberate's arguments from the HTTP API's request schema, plus an idempotency key", () => {
    const request = deliberationRequestSchema(DEFAULTS);
    const input = byName.deliberate.inputSchema;
    expect(input.properties).toEqual({ ...request.properties, idempotencyKey: expect.any(Object) });
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

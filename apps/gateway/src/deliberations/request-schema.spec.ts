import 'reflect-metadata';
import { dirname } from 'path';
import { loadConfig, type ConclaveConfig } from '@conclave/config';
import { MODE_NAMES, QUESTION_MAX_LENGTH, type ModeDefaults, type ModeName } from '@conclave/contracts';
import {
  COUNCIL_MAX_MODELS,
  COUNCIL_MIN_MODELS,
  DEBATE_MAX_MODELS,
  DEBATE_MIN_MODELS,
  DELPHI_MAX_PANELISTS,
  DELPHI_MIN_PANELISTS,
  JURY_CONTENT_MAX_LENGTH,
  JURY_MAX_JURORS,
  JURY_MIN_JURORS,
  jsonSchemaOf,
  modeDefinition,
  VOTE_MAX_MODELS,
  VOTE_MIN_MODELS,
  type JsonSchemaObject,
} from '@conclave/deliberation';
import fc from 'fast-check';
import { CreateDeliberationDto } from './create-deliberation.dto';
import { deliberationRequestSchema, modeConfigSchema } from './request-schema';
import { RequestValidator } from './request-validator';

type Validate = ((data: unknown) => boolean) & { errors?: unknown };
/** ajv 8 (JSON Schema 2020-12) as the MCP SDK ships it: for tests only. */
function compile(schema: JsonSchemaObject): Validate {
  const sdk = dirname(require.resolve('@modelcontextprotocol/sdk/server/mcp.js'));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Ajv2020 = require(require.resolve('ajv/dist/2020', { paths: [sdk] })).default;
  return new Ajv2020({ strict: true, allErrors: true }).compile(schema);
}

/** Rosters from one pool, single roles (foreman, facilitator, chairman) from another: no cross-field clash. */
const DEFAULTS: ModeDefaults = {
  timeoutMs: 60_000,
  council: { councilModels: ['sim/p1', 'sim/p2'], chairmanModel: 'sim/f1' },
  jury: { jurorModels: ['sim/p1', 'sim/p2', 'sim/p3'], foremanModel: 'sim/f1' },
  debate: { models: ['sim/p1', 'sim/p2', 'sim/p3'] },
  delphi: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f1' },
  vote: { models: ['sim/p1', 'sim/p2', 'sim/p3'] },
};
const validator = new RequestValidator({ ...loadConfig({}), defaults: DEFAULTS } as ConclaveConfig);
const schema = deliberationRequestSchema(DEFAULTS);
const schemaAccepts = compile(schema);
const validatorAccepts = async (body: unknown) => (await validator.validate(body)).ok;

const branch = (mode: ModeName): JsonSchemaObject => {
  const found = schema.properties?.modeConfig.anyOf?.find((s) => s.title === mode);
  if (!found) throw new Error(`no modeConfig entry for ${mode}`);
  return found;
};

describe('deliberationRequestSchema', () => {
  it('is a strict JSON Schema 2020-12 object schema', () => {
    expect(() => compile(schema)).not.toThrow();
    expect(schema).toMatchObject({ type: 'object', required: ['question'], additionalProperties: false });
  });

  it('has the bounds the validators use', () => {
    expect(schema.properties?.question).toMatchObject({ maxLength: QUESTION_MAX_LENGTH, minLength: 1 });
    expect(schema.properties?.mode).toMatchObject({ enum: [...MODE_NAMES], default: 'council' });
    expect(branch('council').properties?.councilModels).toMatchObject({
      minItems: COUNCIL_MIN_MODELS,
      maxItems: COUNCIL_MAX_MODELS,
    });
    expect(schema.properties?.councilModels).toMatchObject({
      minItems: COUNCIL_MIN_MODELS,
      maxItems: COUNCIL_MAX_MODELS,
    });
    expect(branch('vote').properties?.models).toMatchObject({
      minItems: VOTE_MIN_MODELS,
      maxItems: VOTE_MAX_MODELS,
    });
    expect(branch('debate').properties?.models).toMatchObject({
      minItems: DEBATE_MIN_MODELS,
      maxItems: DEBATE_MAX_MODELS,
    });
    expect(branch('jury').properties?.jurorModels).toMatchObject({
      minItems: JURY_MIN_JURORS,
      maxItems: JURY_MAX_JURORS,
    });
    expect(branch('jury').properties?.content).toMatchObject({ maxLength: JURY_CONTENT_MAX_LENGTH });
    expect(branch('jury').required).toEqual(['content']);
    expect(branch('delphi').properties?.panelistModels).toMatchObject({
      minItems: DELPHI_MIN_PANELISTS,
      maxItems: DELPHI_MAX_PANELISTS,
    });
  });

  it("describes and defaults every mode's fields as GET /api/modes does", () => {
    for (const mode of MODE_NAMES) {
      const described = modeDefinition(mode)?.describe(DEFAULTS);
      const entry = branch(mode);
      expect(entry.description).toContain(mode);
      for (const [field, property] of Object.entries(entry.properties ?? {})) {
        expect(property.description).toBeTruthy();
        const option = described?.options.find((o) => o.field === field);
        if (option) expect(property.description).toBe(option.description);
        if (described && field in described.defaults)
          expect(property.default).toEqual(described.defaults[field]);
      }
    }
    expect(branch('council').properties?.councilModels.default).toEqual(DEFAULTS.council.councilModels);
    expect(branch('delphi').properties?.maxRounds.default).toBe(5);
  });

  it('works without defaults (no default values shown)', () => {
    const bare = modeConfigSchema('jury');
    expect(bare.properties?.jurorModels.default).toBeUndefined();
    expect(bare.properties?.jurorModels.description).toMatch(/3-6 model ids/);
  });

  it('tells an agent what jury needs and how long a question may be', () => {
    expect(schema.properties?.question.description).toContain(String(QUESTION_MAX_LENGTH));
    expect(schema.properties?.question.description).toContain('modeConfig.content');
    expect(schema.properties?.mode.description).toContain('modeConfig.content');
  });

  it('takes every field of CreateDeliberationDto, and nothing else', () => {
    const validated = Object.keys(jsonSchemaOf(CreateDeliberationDto).properties ?? {});
    const documented = (
      Reflect.getMetadata('swagger/apiModelPropertiesArray', CreateDeliberationDto.prototype) as string[]
    ).map((name) => name.replace(/^:/, ''));
    expect(Object.keys(schema.properties ?? {})).toEqual([...new Set([...validated, ...documented])]);
    expect(validated).toEqual(expect.arrayContaining(['question', 'mode', 'modeConfig']));
    expect(schema.properties?.preset).toMatchObject({ type: 'string' });
  });

  it('takes an expected answer and a grader (issue 37), as text or a number and an object with a known type', async () => {
    expect(schema.properties?.expected?.anyOf).toEqual([{ type: 'string' }, { type: 'number' }]);
    expect(schema.properties?.grader).toMatchObject({ type: 'object', required: ['type'] });
    const graded = { question: 'q', expected: 42, grader: { type: 'numeric', relativeTolerance: 0.01 } };
    expect(schemaAccepts(graded)).toBe(true);
    expect(await validatorAccepts(graded)).toBe(true);
    for (const bad of [
      { question: 'q', expected: true },
      { question: 'q', expected: 'x', grader: { type: 'fuzzy' } },
    ]) {
      expect(schemaAccepts(bad)).toBe(false);
      expect(await validatorAccepts(bad)).toBe(false);
    }
  });

  it('gives every top-level field a description', () => {
    for (const [field, property] of Object.entries(schema.properties ?? {})) {
      expect({ field, description: property.description }).toEqual({
        field,
        description: expect.any(String),
      });
    }
  });
});

// ---- agreement between the schema and RequestValidator ----

const rosterPool = ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4', 'sim/p5', 'sim/p6', 'sim/p7', 'sim/p8'];
const singlePool = ['sim/f1', 'sim/f2'];
const BAD_MODEL_IDS = ['not-a-model', 'Sim/x', '/x', 'sim/', `sim/${'x'.repeat(200)}`, ''];

/** Mostly valid values, so that a single wrong field is often the only one. */
const mostly = (valid: fc.Arbitrary<unknown>, invalid: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: invalid });

const modelId = mostly(
  fc.constantFrom(...singlePool),
  fc.constantFrom<unknown>(...BAD_MODEL_IDS, 7, ['sim/f1']),
);
/** Every length from empty to past every maximum, so each bound is met on both sides. */
const roster = mostly(
  fc
    .integer({ min: 0, max: rosterPool.length })
    .chain((n) => fc.shuffledSubarray(rosterPool, { minLength: n, maxLength: n })),
  fc.oneof(
    fc.constantFrom<unknown>('sim/p1', {}, ['sim/p1', 'sim/p1', 'sim/p2'], ['sim/p1', 3, 'sim/p2']),
    fc.tuple(fc.constantFrom(...BAD_MODEL_IDS), fc.constant('sim/p1'), fc.constant('sim/p2')),
  ),
);
/** A number field's bounds and the values either side of them. */
const number = (min: number, max: number, integer: boolean) =>
  mostly(
    fc.oneof(
      fc.constantFrom(min, max, Math.round((min + max) / 2)),
      integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true }),
    ),
    fc.constantFrom<unknown>(
      min - 1,
      max + 1,
      min - 0.001,
      max + 0.5,
      integer ? min + 0.5 : '1',
      '1',
      true,
      -max,
    ),
  );
const text = (max: number) =>
  mostly(
    fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim().length > 0),
    fc.constantFrom<unknown>('', 'x'.repeat(max), 'x'.repeat(max + 1), 42, ['a']),
  );

/** Each mode's modeConfig fields, with valid and invalid values of every kind the schema can express. */
const FIELDS: Record<ModeName, Record<string, fc.Arbitrary<unknown>>> = {
  council: { councilModels: roster, chairmanModel: modelId, timeoutMs: number(1000, 600_000, true) },
  vote: { models: roster, chairmanModel: modelId, timeoutMs: number(10_000, 600_000, false) },
  debate: { models: roster, timeoutMs: number(10_000, 600_000, false) },
  jury: {
    content: text(JURY_CONTENT_MAX_LENGTH),
    originalQuestion: text(20_000),
    jurorModels: roster,
    foremanModel: modelId,
    timeoutMs: number(10_000, 300_000, false),
  },
  delphi: {
    panelistModels: roster,
    facilitatorModel: modelId,
    maxRounds: number(2, 5, true),
    numericConvergenceThreshold: number(0.01, 1, false),
    qualitativeConvergenceThreshold: number(50, 100, false),
    questionType: mostly(fc.constantFrom('numeric', 'qualitative'), fc.constantFrom<unknown>('other', 1)),
    options: mostly(
      fc.array(fc.constantFrom('yes', 'no', 'maybe', 'x'.repeat(200)), { minLength: 0, maxLength: 12 }),
      fc.constantFrom<unknown>(['a', ''], ['a', 'x'.repeat(201)], ['a', 2], 'a'),
    ),
    timeoutMs: number(30_000, 180_000, false),
  },
};

const unknownKeys = fc.constantFrom<Record<string, unknown>>({}, {}, {}, {}, {}, {}, {}, {}, { surprise: 1 });

const modeConfigOf = (mode: ModeName) =>
  fc
    .tuple(fc.record(FIELDS[mode], { requiredKeys: [], noNullPrototype: true }), unknownKeys)
    .map(([fields, unknown]) => ({ ...fields, ...unknown }));

const request = fc.constantFrom<ModeName | undefined>(undefined, ...MODE_NAMES).chain((mode) =>
  fc.record(
    {
      question: text(QUESTION_MAX_LENGTH),
      mode: fc.constant(mode as unknown),
      modeConfig: mostly(modeConfigOf(mode ?? 'council'), fc.constantFrom<unknown>('council', [], 3)),
      // council's roster at top level, only where modeConfig does not also name it
      top: fc.record(
        { councilModels: roster, chairmanModel: modelId },
        { requiredKeys: [], noNullPrototype: true },
      ),
      extra: unknownKeys,
    },
    { requiredKeys: ['question', 'top', 'extra'], noNullPrototype: true },
  ),
);

type Generated = {
  question: unknown;
  mode?: unknown;
  modeConfig?: unknown;
  top: Record<string, unknown>;
  extra: Record<string, unknown>;
};

function bodyOf({ question, mode, modeConfig, top, extra }: Generated): Record<string, unknown> {
  const body: Record<string, unknown> = { question, ...extra };
  if (mode !== undefined) body.mode = mode;
  if (modeConfig !== undefined) body.modeConfig = modeConfig;
  const config = typeof modeConfig === 'object' && modeConfig !== null ? modeConfig : {};
  if ((mode ?? 'council') === 'council') {
    for (const [field, value] of Object.entries(top)) if (!(field in config)) body[field] = value;
  }
  return body;
}

/**
 * The request schema with its one cross-field rule the schema leaves to the validator, `modeConfig`
 * is the chosen mode's, applied: modeConfig is that mode's entry (required for jury, whose content
 * it carries) and council's top-level roster fields exist for council only.
 */
function boundTo(mode: ModeName): (body: unknown) => boolean {
  const properties: Record<string, JsonSchemaObject> = { ...schema.properties, modeConfig: branch(mode) };
  if (mode !== 'council') {
    delete properties.councilModels;
    delete properties.chairmanModel;
  }
  return compile({
    ...schema,
    properties,
    required: mode === 'jury' ? ['question', 'modeConfig'] : ['question'],
  });
}
const BOUND = Object.fromEntries(MODE_NAMES.map((mode) => [mode, boundTo(mode)])) as Record<
  ModeName,
  (body: unknown) => boolean
>;

describe('the schema and RequestValidator agree', () => {
  it('on generated requests of every mode, valid and invalid', async () => {
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(request, async (generated) => {
        const body = bodyOf(generated as Generated);
        const mode = (body.mode ?? 'council') as ModeName;
        const verdict = await validatorAccepts(body);
        if (verdict) accepted += 1;
        else refused += 1;
        // the mode's own schema says exactly what the validator says
        expect({ body, schema: BOUND[mode](body) }).toEqual({ body, schema: verdict });
        // and the tool's schema never refuses a request the API accepts
        if (verdict) expect({ body, schema: schemaAccepts(body) }).toEqual({ body, schema: true });
      }),
      { numRuns: 400 },
    );
    // the property saw both verdicts often enough to mean something
    expect(Math.min(accepted, refused)).toBeGreaterThan(20);
  });

  it.each([
    ['council', { question: 'Q?' }],
    [
      'council with a roster',
      { question: 'Q?', councilModels: ['sim/p1', 'sim/p2'], chairmanModel: 'sim/f1' },
    ],
    ['vote', { question: 'Q?', mode: 'vote', modeConfig: { models: ['sim/p1', 'sim/p2', 'sim/p3'] } }],
    [
      'jury',
      { question: 'Evaluate', mode: 'jury', modeConfig: { content: 'Some text', foremanModel: 'sim/f2' } },
    ],
    ['debate', { question: 'Q?', mode: 'debate', modeConfig: { models: ['sim/p1', 'sim/p1', 'sim/p2'] } }],
    [
      'delphi',
      { question: 'How many?', mode: 'delphi', modeConfig: { questionType: 'numeric', maxRounds: 3 } },
    ],
  ])('both accept a valid %s request', async (_name, body) => {
    expect(await validatorAccepts(body)).toBe(true);
    expect(schemaAccepts(body)).toBe(true);
  });

  it.each([
    ['no question', { mode: 'vote' }],
    ['a blank question', { question: '   ' }],
    ['an oversized question', { question: 'x'.repeat(QUESTION_MAX_LENGTH + 1) }],
    ['an unknown mode', { question: 'Q?', mode: 'poll' }],
    ['an unknown field', { question: 'Q?', temperature: 0.2 }],
    ['jury without content', { question: 'Evaluate', mode: 'jury', modeConfig: { originalQuestion: 'Q' } }],
    [
      'too many jurors',
      { question: 'E', mode: 'jury', modeConfig: { content: 'c', jurorModels: rosterPool.slice(0, 7) } },
    ],
    ['a bad model id', { question: 'Q?', mode: 'vote', modeConfig: { chairmanModel: 'gpt4' } }],
    ['a fractional round count', { question: 'Q?', mode: 'delphi', modeConfig: { maxRounds: 2.5 } }],
    ['a timeout out of range', { question: 'Q?', mode: 'debate', modeConfig: { timeoutMs: 5 } }],
  ])('both refuse %s', async (_name, body) => {
    expect(await validatorAccepts(body)).toBe(false);
    expect(schemaAccepts(body)).toBe(false);
  });

  // What only the validator checks: rules across fields, which the schema leaves to it (and says so).
  it.each([
    [
      'another mode’s modeConfig',
      { question: 'Q?', mode: 'council', modeConfig: { models: ['sim/p1', 'sim/p2', 'sim/p3'] } },
    ],
    [
      'a foreman who is a juror',
      { question: 'E', mode: 'jury', modeConfig: { content: 'c', foremanModel: 'sim/p1' } },
    ],
    [
      'a facilitator who is a panelist',
      { question: 'Q', mode: 'delphi', modeConfig: { facilitatorModel: 'sim/p2' } },
    ],
    ['a council roster at top level of a vote', { question: 'Q?', mode: 'vote', chairmanModel: 'sim/f1' }],
  ])('only the validator refuses %s', async (_name, body) => {
    expect(await validatorAccepts(body)).toBe(false);
    expect(schemaAccepts(body)).toBe(true);
  });
});

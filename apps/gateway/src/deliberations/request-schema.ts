import {
  GRADER_TYPES,
  MODE_NAMES,
  QUESTION_MAX_LENGTH,
  type ModeDefaults,
  type ModeName,
} from '@conclave/contracts';
import {
  jsonSchemaOf,
  MODE_FACTS,
  modeDefinition,
  type JsonSchemaObject,
  type JsonValue,
} from '@conclave/deliberation';
import { DECORATORS } from '@nestjs/swagger/dist/constants';
import { CreateDeliberationDto } from './create-deliberation.dto';

/** What each mode does, for an agent choosing one (each mode's own summary, ModeFacts). */
export const MODE_SUMMARIES = Object.fromEntries(
  MODE_NAMES.map((mode) => [mode, MODE_FACTS[mode].summary]),
) as Record<ModeName, string>;

/** The request's own fields, worded for a caller that sees only this schema. */
const FIELD_DESCRIPTIONS: Record<string, string> = {
  question:
    `The question the panel deliberates, at most ${QUESTION_MAX_LENGTH} characters (not blank). ` +
    'For jury, a short statement of what to evaluate; the content itself goes in modeConfig.content.',
  mode: `The deliberation mode. ${MODE_NAMES.map((m) => MODE_SUMMARIES[m]).join(' ')}`,
  conversationId:
    'Council only: continue this conversation (a conversationId returned by an earlier run). The follow-up ' +
    "keeps the conversation's mode, roster and options; fields this request gives replace theirs one by one.",
  modeConfig:
    "The mode's roster and options, all optional except jury's content; omitted fields take the defaults " +
    "shown. Give only the fields of the chosen mode's entry.",
  councilModels: 'Council only: the same as modeConfig.councilModels.',
  chairmanModel: 'Council only: the same as modeConfig.chairmanModel.',
};

interface SwaggerProperty {
  type?: unknown;
  isArray?: boolean;
  description?: unknown;
  required?: boolean;
}

const swaggerProperty = (property: string): SwaggerProperty | undefined =>
  Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, CreateDeliberationDto.prototype, property) as
    SwaggerProperty | undefined;

/** The fields the DTO documents, in order: some (`preset`) carry no validator, being consumed before validation. */
function documentedFields(): string[] {
  const names: unknown = Reflect.getMetadata(
    DECORATORS.API_MODEL_PROPERTIES_ARRAY,
    CreateDeliberationDto.prototype,
  );
  return Array.isArray(names) ? names.map((name) => String(name).replace(/^:/, '')) : [];
}

const SWAGGER_TYPES = new Map<unknown, JsonSchemaObject>([
  [String, { type: 'string' }],
  [Number, { type: 'number' }],
  [Boolean, { type: 'boolean' }],
]);

/** A field that only @ApiProperty describes, as JSON Schema; a type not listed here throws. */
function documentedSchema(field: string): JsonSchemaObject {
  const meta = swaggerProperty(field) ?? {};
  const item = SWAGGER_TYPES.get(meta.type);
  if (!item) throw new Error(`CreateDeliberationDto.${field}: @ApiProperty type has no JSON Schema mapping`);
  return meta.isArray ? { type: 'array', items: item } : { ...item };
}

function toJson(value: unknown): JsonValue | undefined {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value as JsonValue;
  if (Array.isArray(value)) {
    const items = value.map(toJson);
    return items.every((item) => item !== undefined) ? (items as JsonValue[]) : undefined;
  }
  return undefined;
}

/** describe() needs defaults only for the values it shows: roster rules and options do not depend on them. */
const NO_DEFAULTS: ModeDefaults = {
  timeoutMs: 0,
  council: { councilModels: [], chairmanModel: '' },
  jury: { jurorModels: [], foremanModel: '' },
  debate: { models: [] },
  delphi: { panelistModels: [], facilitatorModel: '' },
  vote: { models: [] },
};

function rosterDescription(role: string, min: number, max: number): string {
  const count = min === max ? `${min}` : `${min}-${max}`;
  if (max === 1) {
    return `the ${role} model${min === 0 ? ' (optional)' : ''}: a model id of the form provider/name (see list_models)`;
  }
  return `the ${role} models: ${count} model ids of the form provider/name (see list_models)`;
}

/**
 * The JSON Schema of one mode's `modeConfig`: its DTO's validators, with each field described as
 * GET /api/modes describes it (the mode's ModeConfigDefinition) and, given the operator's
 * defaults, defaulted to what a request that omits it gets.
 */
export function modeConfigSchema(mode: ModeName, defaults?: ModeDefaults): JsonSchemaObject {
  const definition = modeDefinition(mode);
  if (!definition) throw new Error(`mode ${mode} has no definition`);
  const schema = jsonSchemaOf(definition.configSchema);
  const described = definition.describe(defaults ?? NO_DEFAULTS);
  const properties = { ...schema.properties };
  for (const [field, property] of Object.entries(properties)) {
    const option = described.options.find((o) => o.field === field);
    const roster = described.roster.find((r) => r.field.split('.').pop() === field);
    const description = option
      ? option.description
      : roster
        ? rosterDescription(roster.role, roster.min, roster.max)
        : undefined;
    const fallback = defaults ? toJson(described.defaults[field]) : undefined;
    properties[field] = {
      ...property,
      ...(description ? { description } : {}),
      ...(fallback !== undefined && fallback !== null ? { default: fallback } : {}),
    };
  }
  return { title: mode, description: MODE_SUMMARIES[mode], ...schema, properties };
}

/**
 * The input schema of the MCP tools `deliberate` and `start_deliberation`: CreateDeliberationDto
 * as RequestValidator checks it, `modeConfig` as any one mode's config. Given the operator's
 * defaults, each option shows the default a request that omits it gets. Cross-field rules (the
 * modeConfig must be the chosen mode's, a foreman who is not a juror, ...) stay the validator's.
 */
export function deliberationRequestSchema(defaults?: ModeDefaults): JsonSchemaObject {
  const base = jsonSchemaOf(CreateDeliberationDto);
  const council = modeConfigSchema('council', defaults);
  const properties: Record<string, JsonSchemaObject> = {};
  for (const [field, property] of Object.entries(base.properties ?? {})) {
    properties[field] = property;
  }
  const required = [...(base.required ?? [])];
  for (const field of documentedFields()) {
    if (properties[field]) continue;
    properties[field] = documentedSchema(field);
    if (swaggerProperty(field)?.required === true) required.push(field);
  }
  for (const [field, property] of Object.entries(properties)) {
    const documented = swaggerProperty(field)?.description;
    const description =
      FIELD_DESCRIPTIONS[field] ?? (typeof documented === 'string' ? documented : undefined);
    if (description) properties[field] = { ...property, description };
  }
  // The validator checks these beyond the DTO: trimmed, not blank, at most QUESTION_MAX_LENGTH.
  properties.question = {
    ...properties.question,
    minLength: 1,
    maxLength: QUESTION_MAX_LENGTH,
    pattern: '\\S',
  };
  properties.mode = { ...properties.mode, default: 'council' };
  // Issue 37: what checkGrading takes; the pair's rules (a number for numeric, a letter or option
  // text for choice, a safe pattern) stay the validator's.
  if (properties.expected)
    properties.expected = { ...properties.expected, anyOf: [{ type: 'string' }, { type: 'number' }] };
  if (properties.grader) {
    properties.grader = {
      ...properties.grader,
      type: 'object',
      properties: { type: { type: 'string', enum: [...GRADER_TYPES] } },
      required: ['type'],
    };
  }
  properties.modeConfig = {
    description: FIELD_DESCRIPTIONS.modeConfig,
    anyOf: MODE_NAMES.filter((mode) => modeDefinition(mode)).map((mode) => modeConfigSchema(mode, defaults)),
  };
  // Top-level council roster fields: checked against council's config DTO.
  for (const field of ['councilModels', 'chairmanModel'] as const) {
    if (properties[field] && council.properties?.[field]) {
      properties[field] = { ...council.properties[field], description: FIELD_DESCRIPTIONS[field] };
    }
  }
  return {
    type: 'object',
    description:
      'A deliberation request: a question put to a panel of models in one of five modes. ' +
      'Only question is required (jury also needs modeConfig.content).',
    properties,
    required,
    additionalProperties: false,
  };
}

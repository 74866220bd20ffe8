import { MODEL_ID_MAX_LENGTH, MODEL_ID_PATTERN } from '@conclave/contracts';
import { getMetadataStorage, ValidationTypes } from 'class-validator';

/** A value JSON can carry: what `default`, `enum` and `const` hold. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export type JsonSchemaType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null';

/**
 * The subset of JSON Schema (draft 2020-12) Conclave writes: tool input and output schemas.
 * A type alias, not an interface, so that it is assignable to `Record<string, unknown>`.
 */
export type JsonSchemaObject = {
  $schema?: string;
  $id?: string;
  $ref?: string;
  $defs?: Record<string, JsonSchemaObject>;
  title?: string;
  description?: string;
  type?: JsonSchemaType | JsonSchemaType[];
  default?: JsonValue;
  examples?: JsonValue[];
  enum?: JsonValue[];
  const?: JsonValue;
  properties?: Record<string, JsonSchemaObject>;
  required?: string[];
  additionalProperties?: boolean | JsonSchemaObject;
  items?: JsonSchemaObject;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  anyOf?: JsonSchemaObject[];
  oneOf?: JsonSchemaObject[];
  allOf?: JsonSchemaObject[];
};

/** One class-validator constraint as the metadata storage records it. */
interface Constraint {
  type: string;
  name?: string;
  constraints?: unknown[];
  each?: boolean;
  propertyName: string;
  target: unknown;
}

type Dto = new () => object;

const isNumberArray = (value: unknown): value is number[] =>
  Array.isArray(value) && value.every((v) => typeof v === 'number');

function jsonValues(value: unknown, what: string): JsonValue[] {
  if (!Array.isArray(value)) throw new Error(`${what}: expected a list of values`);
  return value.map((v) => {
    if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) return v as JsonValue;
    throw new Error(`${what}: ${String(v)} cannot be written in JSON Schema`);
  });
}

/** The values @IsEnum accepts, as class-validator computes them (numeric enums' reverse keys left out). */
function enumValues(entity: unknown, what: string): JsonValue[] {
  if (typeof entity !== 'object' || entity === null) throw new Error(`${what}: expected an enum object`);
  const record = entity as Record<string, unknown>;
  return jsonValues(
    Object.keys(record)
      .filter((key) => Number.isNaN(parseInt(key, 10)))
      .map((key) => record[key]),
    what,
  );
}

function setType(schema: JsonSchemaObject, type: JsonSchemaType, what: string): void {
  const compatible = (a: JsonSchemaType, b: JsonSchemaType) =>
    a === b || (a === 'integer' && b === 'number') || (a === 'number' && b === 'integer');
  if (schema.type !== undefined && !compatible(schema.type as JsonSchemaType, type)) {
    throw new Error(`${what}: both ${String(schema.type)} and ${type} are required`);
  }
  // integer is the narrower of number and integer
  if (schema.type !== 'integer') schema.type = type;
}

const firstNumber = (c: Constraint, what: string): number => {
  if (!isNumberArray(c.constraints) || c.constraints.length === 0) {
    throw new Error(`${what}: expected a numeric bound`);
  }
  return c.constraints[0];
};

/** The validators that name a property's type, and the type each names. */
const TYPE_OF: Readonly<Record<string, JsonSchemaType>> = {
  isString: 'string',
  isBoolean: 'boolean',
  isInt: 'integer',
  isArray: 'array',
  isObject: 'object',
};

/** The validators that bound a length, a size or a value, and the keyword each writes its bound as. */
const BOUND_OF: Readonly<
  Record<string, 'minLength' | 'maxLength' | 'minItems' | 'maxItems' | 'minimum' | 'maximum'>
> = {
  minLength: 'minLength',
  maxLength: 'maxLength',
  arrayMinSize: 'minItems',
  arrayMaxSize: 'maxItems',
  min: 'minimum',
  max: 'maximum',
};

/**
 * Applies one named validator to `schema` (the property's, or its items' for `each: true`).
 * A validator not listed here throws: a new decorator must be mapped, not silently dropped.
 */
function applyValidator(schema: JsonSchemaObject, c: Constraint, what: string, nested: () => void): void {
  const name = c.name ?? '';
  if (Object.hasOwn(TYPE_OF, name)) return setType(schema, TYPE_OF[name], what);
  if (Object.hasOwn(BOUND_OF, name)) {
    schema[BOUND_OF[name]] = firstNumber(c, what);
    return;
  }
  switch (c.name) {
    case 'isNumber': {
      const options = (c.constraints?.[0] ?? {}) as { maxDecimalPlaces?: number };
      if (options.maxDecimalPlaces !== undefined) throw new Error(`${what}: maxDecimalPlaces is not mapped`);
      return setType(schema, 'number', what);
    }
    case 'arrayUnique':
      if (typeof c.constraints?.[0] === 'function')
        throw new Error(`${what}: a uniqueness selector is not mapped`);
      schema.uniqueItems = true;
      return;
    case 'isPositive':
      schema.exclusiveMinimum = 0;
      return;
    case 'isIn':
      schema.enum = jsonValues(c.constraints?.[0], what);
      return;
    case 'isEnum':
      schema.enum = enumValues(c.constraints?.[0], what);
      return;
    case 'isModelId':
      setType(schema, 'string', what);
      schema.maxLength = Math.min(schema.maxLength ?? MODEL_ID_MAX_LENGTH, MODEL_ID_MAX_LENGTH);
      schema.pattern = MODEL_ID_PATTERN.source;
      return;
    default:
      if (c.type === ValidationTypes.NESTED_VALIDATION) return nested();
      throw new Error(
        `${what}: validator ${c.name ?? c.type} has no JSON Schema mapping (add it to json-schema.ts)`,
      );
  }
}

/** The class a @ValidateNested property holds, from TypeScript's emitted design type. */
function nestedSchema(dto: Dto, property: string, what: string, seen: Set<Dto>): JsonSchemaObject {
  // reflect-metadata's API, typed here: whether its global declarations are in the program
  // depends on what else imports it.
  const reflect = Reflect as typeof Reflect & {
    getMetadata?: (key: string, target: object, property: string) => unknown;
  };
  const designType: unknown = reflect.getMetadata?.('design:type', dto.prototype, property);
  if (typeof designType !== 'function' || designType === Array || designType === Object) {
    throw new Error(`${what}: @ValidateNested needs a class-typed property (arrays of DTOs are not mapped)`);
  }
  return schemaOf(designType as Dto, seen);
}

function schemaOf(dto: Dto, seen: Set<Dto>): JsonSchemaObject {
  if (seen.has(dto)) throw new Error(`${dto.name}: recursive DTOs are not mapped`);
  const inner = new Set([...seen, dto]);
  const metadata = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false) as Constraint[];
  const byProperty = new Map<string, Constraint[]>();
  for (const m of metadata) byProperty.set(m.propertyName, [...(byProperty.get(m.propertyName) ?? []), m]);

  const properties: Record<string, JsonSchemaObject> = {};
  const required: string[] = [];
  for (const [property, constraints] of byProperty) {
    const what = `${dto.name}.${property}`;
    const schema: JsonSchemaObject = {};
    let optional = false;
    let constrained = false;
    for (const c of constraints) {
      if (c.type === ValidationTypes.CONDITIONAL_VALIDATION) {
        if (c.name !== 'isOptional')
          throw new Error(`${what}: conditional validation (@ValidateIf) is not mapped`);
        optional = true;
        continue;
      }
      if (c.type === ValidationTypes.WHITELIST) continue; // @Allow: the key is accepted, any value
      if (c.type === ValidationTypes.IS_DEFINED) {
        constrained = true;
        continue;
      }
      if (c.type !== ValidationTypes.CUSTOM_VALIDATION && c.type !== ValidationTypes.NESTED_VALIDATION) {
        throw new Error(`${what}: validation type ${c.type} has no JSON Schema mapping`);
      }
      constrained = true;
      const target = c.each ? (schema.items ??= {}) : schema;
      applyValidator(target, c, what, () => Object.assign(target, nestedSchema(dto, property, what, inner)));
    }
    if (schema.items && schema.type === undefined) schema.type = 'array';
    properties[property] = schema;
    // An @Allow-only field accepts anything, absence included.
    if (constrained && !optional) required.push(property);
  }
  return {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/**
 * The JSON Schema of a class-validator DTO, read from the validators themselves: one source for
 * field names and bounds. Unknown keys are refused (`additionalProperties: false`), as
 * RequestValidator refuses them; a validator without a mapping here throws.
 */
export function jsonSchemaOf(dto: Dto): JsonSchemaObject {
  return schemaOf(dto, new Set());
}

import 'reflect-metadata';
import { MODEL_ID_MAX_LENGTH, MODEL_ID_PATTERN } from '@conclave/contracts';
import {
  Allow,
  ArrayUnique,
  IsBoolean,
  IsEmail,
  IsEnum,
  IsIn,
  IsInt,
  IsOptional,
  IsPositive,
  IsString,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { CouncilConfigDto, COUNCIL_MAX_MODELS, COUNCIL_MIN_MODELS } from '../modes/council/council.config';
import { DelphiConfigDto, DELPHI_MAX_PANELISTS } from '../modes/delphi/delphi.config';
import {
  JuryConfigDto,
  JURY_CONTENT_MAX_LENGTH,
  JURY_MAX_JURORS,
  JURY_MIN_JURORS,
} from '../modes/jury/jury.config';
import { jsonSchemaOf } from './json-schema';

const MODEL_ID = { type: 'string', maxLength: MODEL_ID_MAX_LENGTH, pattern: MODEL_ID_PATTERN.source };

describe('jsonSchemaOf', () => {
  it('reads a roster, its bounds and uniqueness, and model ids per item', () => {
    expect(jsonSchemaOf(CouncilConfigDto)).toEqual({
      type: 'object',
      properties: {
        councilModels: {
          type: 'array',
          minItems: COUNCIL_MIN_MODELS,
          maxItems: COUNCIL_MAX_MODELS,
          uniqueItems: true,
          items: MODEL_ID,
        },
        chairmanModel: MODEL_ID,
        timeoutMs: { type: 'integer', minimum: 1000, maximum: 600_000 },
        // Deadlines, quorum and fallbacks (issue 32), an extension to 01-council.md.
        quorum: { type: 'number', exclusiveMinimum: 0, maximum: COUNCIL_MAX_MODELS },
        stageDeadlineMs: { type: 'integer', minimum: 1000, maximum: 600_000 },
        chairmanFallbacks: { type: 'array', maxItems: 3, uniqueItems: true, items: MODEL_ID },
      },
      additionalProperties: false,
    });
  });

  it('makes a field without @IsOptional required', () => {
    const schema = jsonSchemaOf(JuryConfigDto);
    expect(schema.required).toEqual(['content']);
    expect(schema.properties?.content).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: JURY_CONTENT_MAX_LENGTH,
    });
    expect(schema.properties?.jurorModels).toMatchObject({
      minItems: JURY_MIN_JURORS,
      maxItems: JURY_MAX_JURORS,
    });
  });

  it('maps @IsIn to an enum and `each` string rules to items', () => {
    const schema = jsonSchemaOf(DelphiConfigDto);
    expect(schema.properties?.questionType).toEqual({ enum: ['numeric', 'qualitative'] });
    expect(schema.properties?.options).toEqual({
      type: 'array',
      minItems: 2,
      maxItems: 10,
      items: { type: 'string', minLength: 1, maxLength: 200 },
    });
    expect(schema.properties?.panelistModels?.maxItems).toBe(DELPHI_MAX_PANELISTS);
    expect(schema.properties?.numericConvergenceThreshold).toEqual({
      type: 'number',
      minimum: 0.01,
      maximum: 1,
    });
  });

  it('maps booleans, enums, positives, @Allow fields and nested DTOs', () => {
    enum Colour {
      Red = 'red',
      Blue = 'blue',
    }
    enum Level {
      Low,
      High,
    }
    class Inner {
      @IsIn(['x', 'y'])
      kind: string;
    }
    class Outer {
      @IsBoolean()
      flag: boolean;

      @IsEnum(Colour)
      @IsOptional()
      colour?: Colour;

      @IsEnum(Level)
      level: Level;

      @IsPositive()
      @IsInt()
      count: number;

      @Allow()
      anything?: unknown;

      @ValidateNested()
      inner: Inner;

      @ArrayUnique()
      @IsString({ each: true })
      tags: string[];
    }
    expect(jsonSchemaOf(Outer)).toEqual({
      type: 'object',
      properties: {
        flag: { type: 'boolean' },
        colour: { enum: ['red', 'blue'] },
        level: { enum: [0, 1] },
        count: { type: 'integer', exclusiveMinimum: 0 },
        anything: {},
        inner: {
          type: 'object',
          properties: { kind: { enum: ['x', 'y'] } },
          required: ['kind'],
          additionalProperties: false,
        },
        tags: { type: 'array', uniqueItems: true, items: { type: 'string' } },
      },
      required: ['flag', 'level', 'count', 'inner', 'tags'],
      additionalProperties: false,
    });
  });

  it('throws on a validator it has no mapping for, naming it and the field', () => {
    class WithEmail {
      @IsEmail()
      @IsString()
      address: string;
    }
    expect(() => jsonSchemaOf(WithEmail)).toThrow(
      /WithEmail\.address: validator isEmail has no JSON Schema mapping/,
    );
  });

  it('throws on conditional validation, which a schema would silently widen', () => {
    class Conditional {
      @ValidateIf((o: { on?: boolean }) => o.on === true)
      @Min(1)
      value?: number;
    }
    expect(() => jsonSchemaOf(Conditional)).toThrow(/Conditional\.value: conditional validation/);
  });

  it('throws on a property that must be two types at once', () => {
    class Conflicting {
      @Max(3)
      @IsInt()
      @IsString()
      value: string;
    }
    expect(() => jsonSchemaOf(Conflicting)).toThrow(/Conflicting\.value: both/);
  });

  it('throws on nested arrays of DTOs it cannot type', () => {
    class Item {
      @IsString()
      name: string;
    }
    class Holder {
      @ValidateNested({ each: true })
      items: Item[];
    }
    expect(() => jsonSchemaOf(Holder)).toThrow(/Holder\.items: @ValidateNested/);
  });
});

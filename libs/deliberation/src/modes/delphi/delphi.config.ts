import type { DelphiConfig, QuestionType } from '@conclave/contracts';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import { SeatOption, modeOptions, type ModeConfigDefinition, type Range } from '../config-kit';

export const DELPHI_MIN_PANELISTS = 3;
export const DELPHI_MAX_PANELISTS = 7;
export const DELPHI_DEFAULTS = {
  maxRounds: 5,
  numericConvergenceThreshold: 0.15,
  qualitativeConvergenceThreshold: 75,
  timeoutMs: 120_000,
} as const;
const QUESTION_TYPES: readonly QuestionType[] = ['numeric', 'qualitative'];
const MAX_ROUNDS: Range = { min: 2, max: 5 };
const NUMERIC_THRESHOLD: Range = { min: 0.01, max: 1.0, fractional: true };
const QUALITATIVE_THRESHOLD: Range = { min: 50, max: 100 };
const OPTION_COUNT: Range = { min: 2, max: 10 };
/** 05-delphi.md §F: a round needs at least 3 valid estimates. */
export const DELPHI_MIN_VALID = 3;

/** The timeout is a round's, rounded to whole ms, hence shown as an integer. */
const COMMON = modeOptions({
  panel: {
    role: 'panelist',
    field: 'modeConfig.panelistModels',
    min: DELPHI_MIN_PANELISTS,
    max: DELPHI_MAX_PANELISTS,
  },
  seat: { role: 'facilitator', field: 'modeConfig.facilitatorModel', min: 1, max: 1 },
  gate: { members: 'panelist models', minimum: DELPHI_MIN_VALID },
  fallbacks: {
    option: 'facilitatorFallbacks',
    seat: 'facilitator (its report)',
    notFromPanel: 'it is a panelist model, and the facilitator does not participate as a panelist',
  },
  timeout: { min: 30_000, max: 180_000, unit: 'ms' },
  timeoutType: 'number',
  shownTimeout: { type: 'integer', description: 'per-round timeout' },
});

/** `modeConfig` of a Delphi request (05-delphi.md §D). */
export class DelphiConfigDto extends COMMON.Dto {
  @COMMON.Panel({
    tooFew: `Delphi mode requires at least ${DELPHI_MIN_PANELISTS} panelist models`,
    tooMany: `Maximum ${DELPHI_MAX_PANELISTS} panelist models allowed`,
  })
  panelistModels?: string[];

  @SeatOption()
  facilitatorModel?: string;

  @Max(MAX_ROUNDS.max)
  @Min(MAX_ROUNDS.min)
  @IsInt()
  @IsOptional()
  maxRounds?: number;

  @Max(NUMERIC_THRESHOLD.max)
  @Min(NUMERIC_THRESHOLD.min)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  numericConvergenceThreshold?: number;

  @Max(QUALITATIVE_THRESHOLD.max)
  @Min(QUALITATIVE_THRESHOLD.min)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  qualitativeConvergenceThreshold?: number;

  @IsIn([...QUESTION_TYPES], {
    message: `questionType must be ${QUESTION_TYPES.map((t) => `"${t}"`).join(' or ')}`,
  })
  @IsOptional()
  questionType?: QuestionType;

  @MaxLength(200, { each: true })
  @MinLength(1, { each: true, message: 'each option must be a non-empty string' })
  @IsString({ each: true })
  @ArrayMaxSize(OPTION_COUNT.max)
  @ArrayMinSize(OPTION_COUNT.min)
  @IsArray()
  @IsOptional()
  options?: string[];
}

export const delphiConfig: ModeConfigDefinition<DelphiConfig> = COMMON.define({
  schema: DelphiConfigDto,
  options: [
    { field: 'maxRounds', type: 'integer', description: 'estimation rounds at most', range: MAX_ROUNDS },
    {
      field: 'numericConvergenceThreshold',
      type: 'number',
      description: 'converged below this CV',
      range: NUMERIC_THRESHOLD,
    },
    {
      field: 'qualitativeConvergenceThreshold',
      type: 'number',
      description: 'converged at this agreement %',
      range: QUALITATIVE_THRESHOLD,
    },
    {
      field: 'questionType',
      type: QUESTION_TYPES.map((t) => `"${t}"`).join(' | '),
      description: 'skip or narrow the classification',
    },
    {
      field: 'options',
      type: 'string[]',
      description: 'the answers a qualitative question offers',
      range: OPTION_COUNT,
    },
  ],
  /** What a Delphi request that names none of these gets; its per-round timeout is its own. */
  defaults: (defaults) => ({
    panelistModels: defaults.delphi.panelistModels,
    facilitatorModel: defaults.delphi.facilitatorModel,
    ...DELPHI_DEFAULTS,
  }),
  resolve: (given, fallback, problems) => {
    const panelistModels = given.panelistModels ?? fallback.panelistModels;
    const facilitatorModel = given.facilitatorModel ?? fallback.facilitatorModel;
    if (panelistModels.includes(facilitatorModel)) {
      problems['modeConfig.facilitatorModel'] =
        'The facilitator does NOT participate as a panelist: choose a model that is not one of the panelist models';
      return null;
    }
    const questionType = given.questionType ?? null;
    return {
      config: {
        panelistModels,
        facilitatorModel,
        maxRounds: given.maxRounds ?? fallback.maxRounds,
        numericConvergenceThreshold:
          given.numericConvergenceThreshold ?? fallback.numericConvergenceThreshold,
        qualitativeConvergenceThreshold:
          given.qualitativeConvergenceThreshold ?? fallback.qualitativeConvergenceThreshold,
        questionType,
        // 05-delphi.md §F: a numeric override ignores options.
        options: questionType === 'numeric' ? null : (given.options ?? null),
      },
      panel: panelistModels,
      seat: facilitatorModel,
    };
  },
});

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
import type { ModeDefaults, RequestEnvelope, ResolvedConfig } from '../../engine/types';
import { IsModelId } from '../../shared/validation';

export const DELPHI_MIN_PANELISTS = 3;
export const DELPHI_MAX_PANELISTS = 7;
export const DELPHI_DEFAULTS = {
  maxRounds: 5,
  numericConvergenceThreshold: 0.15,
  qualitativeConvergenceThreshold: 75,
  timeoutMs: 120_000,
} as const;

/** `modeConfig` of a Delphi request (05-delphi.md §D). */
export class DelphiConfigDto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @IsModelId({ each: true })
  @ArrayMaxSize(DELPHI_MAX_PANELISTS, { message: 'Maximum 7 panelist models allowed' })
  @ArrayMinSize(DELPHI_MIN_PANELISTS, { message: 'Delphi mode requires at least 3 panelist models' })
  @IsArray()
  @IsOptional()
  panelistModels?: string[];

  @IsModelId()
  @IsOptional()
  facilitatorModel?: string;

  @Max(5)
  @Min(2)
  @IsInt()
  @IsOptional()
  maxRounds?: number;

  @Max(1.0)
  @Min(0.01)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  numericConvergenceThreshold?: number;

  @Max(100)
  @Min(50)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  qualitativeConvergenceThreshold?: number;

  @IsIn(['numeric', 'qualitative'], { message: 'questionType must be "numeric" or "qualitative"' })
  @IsOptional()
  questionType?: QuestionType;

  @MaxLength(200, { each: true })
  @MinLength(1, { each: true, message: 'each option must be a non-empty string' })
  @IsString({ each: true })
  @ArrayMaxSize(10)
  @ArrayMinSize(2)
  @IsArray()
  @IsOptional()
  options?: string[];

  @Max(180_000)
  @Min(30_000)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsOptional()
  timeoutMs?: number;
}

export function resolveDelphiConfig(
  request: RequestEnvelope,
  defaults: ModeDefaults,
): ResolvedConfig<DelphiConfig> {
  const given = (request.modeConfig ?? {}) as DelphiConfigDto;
  const panelistModels = given.panelistModels ?? defaults.delphi.panelistModels;
  const facilitatorModel = given.facilitatorModel ?? defaults.delphi.facilitatorModel;
  if (panelistModels.includes(facilitatorModel)) {
    return {
      ok: false,
      fields: {
        'modeConfig.facilitatorModel':
          'The facilitator does NOT participate as a panelist: choose a model that is not one of the panelist models',
      },
    };
  }
  const questionType = given.questionType ?? null;
  return {
    ok: true,
    config: {
      panelistModels,
      facilitatorModel,
      maxRounds: given.maxRounds ?? DELPHI_DEFAULTS.maxRounds,
      numericConvergenceThreshold:
        given.numericConvergenceThreshold ?? DELPHI_DEFAULTS.numericConvergenceThreshold,
      qualitativeConvergenceThreshold:
        given.qualitativeConvergenceThreshold ?? DELPHI_DEFAULTS.qualitativeConvergenceThreshold,
      questionType,
      // 05-delphi.md §F: a numeric override ignores options.
      options: questionType === 'numeric' ? null : (given.options ?? null),
      timeoutMs: Math.round(given.timeoutMs ?? DELPHI_DEFAULTS.timeoutMs),
    },
  };
}

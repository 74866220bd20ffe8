import type { JuryConfig } from '@conclave/contracts';
import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { IsModelId, modeOptions, type ModeConfigDefinition } from '../config-kit';

export const JURY_MIN_JURORS = 3;
export const JURY_MAX_JURORS = 6;
export const JURY_CONTENT_MAX_LENGTH = 200_000;
/** 03-jury.md §F: fewer than 2 successful jurors end the deliberation. */
export const JURY_MIN_SUCCESSFUL_JURORS = 2;

/** The timeout is rounded to whole ms, hence shown as an integer. */
const COMMON = modeOptions({
  panel: { role: 'juror', field: 'modeConfig.jurorModels', min: JURY_MIN_JURORS, max: JURY_MAX_JURORS },
  seat: { role: 'foreman', field: 'modeConfig.foremanModel', min: 1, max: 1 },
  gate: { members: 'juror models', minimum: JURY_MIN_SUCCESSFUL_JURORS },
  fallbacks: {
    option: 'foremanFallbacks',
    seat: 'foreman',
    notFromPanel: 'it is a juror model, and the foreman must be impartial',
  },
  timeout: { min: 10_000, max: 300_000, unit: 'ms' },
  timeoutType: 'number',
  shownTimeout: { type: 'integer' },
});

/**
 * `modeConfig` of a jury request (03-jury.md §D). The same juror model may sit twice, as 03-jury.md's
 * validation allows: two calls, two jurors told apart by their seat in the roster.
 */
export class JuryConfigDto extends COMMON.Dto {
  // Validators run bottom-up and stop at the first failure: the type check comes last.
  @MaxLength(JURY_CONTENT_MAX_LENGTH)
  @MinLength(1, { message: 'Content to evaluate is required' })
  @IsString({ message: 'Content to evaluate is required' })
  content: string;

  @MaxLength(20_000)
  @IsString()
  @IsOptional()
  originalQuestion?: string;

  @COMMON.Panel({
    tooFew: `Jury mode requires at least ${JURY_MIN_JURORS} juror models`,
    tooMany: `Maximum ${JURY_MAX_JURORS} juror models allowed`,
  })
  jurorModels?: string[];

  @IsModelId()
  @MinLength(1, { message: 'Foreman model is required' })
  @IsString({ message: 'Foreman model is required' })
  @IsOptional()
  foremanModel?: string;
}

export const juryConfig: ModeConfigDefinition<JuryConfig> = COMMON.define({
  schema: JuryConfigDto,
  options: [
    { field: 'content', type: 'string', description: 'the content under evaluation (required)' },
    { field: 'originalQuestion', type: 'string', description: 'the question the content was answering' },
  ],
  /** What a jury request that names none of these gets (the content it must name). */
  defaults: (defaults) => ({
    jurorModels: defaults.jury.jurorModels,
    foremanModel: defaults.jury.foremanModel,
    timeoutMs: defaults.timeoutMs,
  }),
  resolve: (given, fallback, problems) => {
    if (typeof given.content !== 'string' || given.content.trim().length === 0) {
      problems['modeConfig.content'] = 'Content to evaluate is required';
    }
    const jurorModels = given.jurorModels ?? fallback.jurorModels;
    const foremanModel = given.foremanModel ?? fallback.foremanModel;
    if (jurorModels.includes(foremanModel)) {
      problems['modeConfig.foremanModel'] = 'Foreman model must not be one of the juror models';
    }
    return {
      config: {
        // Without content the request is refused (above): this value is never used.
        content: given.content ?? '',
        ...(given.originalQuestion ? { originalQuestion: given.originalQuestion } : {}),
        jurorModels,
        foremanModel,
      },
      panel: jurorModels,
      seat: foremanModel,
    };
  },
});

import { GRADER_TYPES, MODE_NAMES, QUESTION_MAX_LENGTH, type ModeName } from '@conclave/contracts';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, IsIn, IsObject, IsOptional, IsString } from 'class-validator';

/** The request envelope of every mode (00-shared.md §1); `modeConfig` is checked by the mode. */
export class CreateDeliberationDto {
  @ApiProperty({ maxLength: QUESTION_MAX_LENGTH, example: 'What are the trade-offs of microservices?' })
  @IsString()
  question: string;

  @ApiPropertyOptional({ enum: MODE_NAMES, default: 'council' })
  @IsOptional()
  @IsIn(MODE_NAMES, { message: `mode must be one of: ${MODE_NAMES.join(', ')}` })
  mode?: ModeName;

  @ApiPropertyOptional({ format: 'uuid', description: 'continue this conversation (council only)' })
  @IsOptional()
  @IsString()
  conversationId?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: "the mode's own options" })
  @IsOptional()
  @IsObject({ message: 'modeConfig must be an object' })
  modeConfig?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [String], description: 'council only: 2-6 model ids' })
  @Allow()
  councilModels?: string[];

  @ApiPropertyOptional({ description: 'council only: the model that synthesizes' })
  @Allow()
  chairmanModel?: string;

  /**
   * Issue 37: the answer this deliberation is expected to give, graded by `grader` (README "Graded
   * items"). Checked by RequestValidator against the grader (checkGrading, libs/deliberation).
   */
  @ApiPropertyOptional({
    oneOf: [{ type: 'string' }, { type: 'number' }],
    example: 42,
    description:
      'optional: the answer this deliberation is expected to give (text or a number), kept for grading by grader; ' +
      'without grader, a number is graded numeric and text normalized',
  })
  @Allow()
  expected?: string | number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { type: 'numeric', relativeTolerance: 0.01 },
    description:
      `optional: how answers are graded against expected: { type: ${GRADER_TYPES.join(' | ')} }; ` +
      'exact, normalized and contains take extract (auto, final-answer, whole), contains caseSensitive; ' +
      'numeric takes extract (auto, final-answer, last-number), absoluteTolerance, relativeTolerance; ' +
      'choice takes options (2-26 texts, lettered A, B, ...); regex takes pattern, flags, group; model takes judges (model ids)',
  })
  @Allow()
  grader?: Record<string, unknown>;

  /**
   * Applied (and removed) by PresetsService before the request is validated. No class-validator
   * decorator on purpose: RequestValidator refuses `preset` wherever it was not applied first.
   */
  @ApiPropertyOptional({
    example: 'fast-trio',
    description:
      "one of your presets (GET /api/presets): its mode, roster and options; this request's own fields win, modeConfig merged key by key",
  })
  preset?: string;
}

export class DeliberationAcceptedDto {
  @ApiProperty({ format: 'uuid' })
  conversationId: string;

  @ApiProperty({ format: 'uuid', description: 'the assistant message that carries the deliberation' })
  messageId: string;
}

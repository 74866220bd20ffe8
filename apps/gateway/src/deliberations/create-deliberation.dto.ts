import { MODE_NAMES, QUESTION_MAX_LENGTH, type ModeName } from '@conclave/contracts';
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

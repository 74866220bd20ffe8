import { MODE_NAMES, PRESET_NAME_PATTERN, type ModeName } from '@conclave/contracts';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * `POST /api/presets` as OpenAPI shows it. The body is checked by PresetsService (the deliberation
 * request's validator), not by these decorators.
 */
export class SavePresetDto {
  @ApiProperty({
    pattern: PRESET_NAME_PATTERN.source,
    example: 'fast-trio',
    description: 'part of the model id conclave/preset/<name>: lowercase letters, digits, ".", "_", "-"',
  })
  name: string;

  @ApiPropertyOptional({ enum: MODE_NAMES, default: 'council' })
  mode?: ModeName;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "the mode's own options, as in a deliberation request (not jury's content)",
  })
  modeConfig?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [String], description: 'council only: 2-6 model ids' })
  councilModels?: string[];

  @ApiPropertyOptional({ description: 'council only: the model that synthesizes' })
  chairmanModel?: string;
}

/** A saved preset (Preset): the fields it was saved with, and when. */
export class PresetDto {
  @ApiProperty({ example: 'fast-trio' })
  name: string;

  @ApiProperty({ enum: MODE_NAMES })
  mode: ModeName;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  modeConfig?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [String] })
  councilModels?: string[];

  @ApiPropertyOptional()
  chairmanModel?: string;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;
}

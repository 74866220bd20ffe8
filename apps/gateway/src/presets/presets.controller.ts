import { Body, Delete, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import { PRESETS_PER_USER, type Preset } from '@conclave/contracts';
import type { Response } from 'express';
import { ApiKeyController } from '../auth/api-key-controller';
import { CurrentUser } from '../auth/auth.guard';
import { PresetDto, SavePresetDto } from './preset.dto';
import { PresetsService } from './presets.service';

@ApiKeyController('presets')
export class PresetsController {
  constructor(private readonly presets: PresetsService) {}

  @Post()
  @ApiOperation({
    summary:
      'Save a preset: a mode, roster and options under a name (creates it, or replaces yours of that name)',
    description:
      'The fields besides `name` are those of `POST /api/deliberations` and are validated exactly as there ' +
      "(same field names, bounds and messages); `question`, `conversationId` and jury's `modeConfig.content` / " +
      '`originalQuestion` belong to each deliberation and are refused. 201 when the preset is new, 200 when ' +
      `it replaced yours of that name (its createdAt kept). At most ${PRESETS_PER_USER} presets per user (409).`,
  })
  @ApiBody({ type: SavePresetDto })
  @ApiCreatedResponse({ type: PresetDto, description: 'A new preset' })
  @ApiOkResponse({ type: PresetDto, description: 'Your preset of that name, replaced' })
  @ApiBadRequestResponse({ description: '`fields` names each offending field' })
  @ApiConflictResponse({ description: `You have ${PRESETS_PER_USER} presets already` })
  async save(@CurrentUser() userId: string, @Body() body: unknown, @Res() response: Response): Promise<void> {
    const { preset, created } = await this.presets.save(userId, body);
    response.status(created ? 201 : 200).json(preset);
  }

  @Get()
  @ApiOperation({ summary: 'Your presets, by name' })
  @ApiOkResponse({ type: [PresetDto] })
  list(@CurrentUser() userId: string): Promise<Preset[]> {
    return this.presets.list(userId);
  }

  @Get(':name')
  @ApiOperation({ summary: 'One of your presets' })
  @ApiOkResponse({ type: PresetDto })
  @ApiNotFoundResponse({ description: 'You have no preset of that name' })
  get(@CurrentUser() userId: string, @Param('name') name: string): Promise<Preset> {
    return this.presets.get(userId, name);
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete one of your presets' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiNotFoundResponse({ description: 'You have no preset of that name' })
  async delete(@CurrentUser() userId: string, @Param('name') name: string): Promise<void> {
    await this.presets.delete(userId, name);
  }
}

import { applyDecorators, Controller, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiKeyGuard } from './auth.guard';

/**
 * A controller whose every route answers only to an API key (ApiKeyGuard; bearer authentication in
 * the OpenAPI document), under the OpenAPI tag `tag`, its routes under `path` (by default the tag;
 * below /api). Its module imports AuthModule, where Nest finds the guard.
 */
export const ApiKeyController = (tag: string, path: string = tag): ClassDecorator =>
  applyDecorators(ApiTags(tag), ApiBearerAuth(), UseGuards(ApiKeyGuard), Controller(path));

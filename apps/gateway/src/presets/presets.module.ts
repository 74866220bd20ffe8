import { Module } from '@nestjs/common';
import { RequestValidator } from '../deliberations/request-validator';
import { PresetsService } from './presets.service';

/**
 * Each user's presets (PresetsService), for whichever module starts deliberations. Its controller
 * (PresetsController) is declared by the module that provides ApiKeyGuard, as ModelsController is.
 */
@Module({ providers: [PresetsService, RequestValidator], exports: [PresetsService] })
export class PresetsModule {}

import { Module } from '@nestjs/common';
import { ModelsService } from './models.service';

/**
 * GET /api/models's catalogue. Its controller (ModelsController) is declared by the module that
 * provides ApiKeyGuard, since the guard needs that module's AuthService and RateLimiter.
 */
@Module({ providers: [ModelsService], exports: [ModelsService] })
export class ModelsModule {}

import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ModelsController } from './models.controller';
import { ModelsService } from './models.service';

/** GET /api/models's catalogue (ModelsService, also for estimates and MCP). */
@Module({
  imports: [AuthModule],
  controllers: [ModelsController],
  providers: [ModelsService],
  exports: [ModelsService],
})
export class ModelsModule {}

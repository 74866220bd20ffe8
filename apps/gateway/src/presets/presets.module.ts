import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { RequestValidator } from '../deliberations/request-validator';
import { PresetsController } from './presets.controller';
import { PresetsService } from './presets.service';

/** Each user's presets: /api/presets, and PresetsService for whichever module starts deliberations. */
@Module({
  imports: [AuthModule],
  controllers: [PresetsController],
  providers: [PresetsService, RequestValidator],
  exports: [PresetsService],
})
export class PresetsModule {}

import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DeliberationsModule } from '../deliberations/deliberations.module';
import { EventsModule } from '../events/events.module';
import { PresetsModule } from '../presets/presets.module';
import { OpenAiController } from './openai.controller';
import { OpenAiService } from './openai.service';
import { RetryGraceService } from './retry-grace.service';

/** The OpenAI-compatible surface: GET /v1/models, POST /v1/chat/completions (outside /api). */
@Module({
  imports: [AuthModule, DeliberationsModule, EventsModule, PresetsModule],
  controllers: [OpenAiController],
  providers: [OpenAiService, RetryGraceService],
})
export class OpenAiModule {}

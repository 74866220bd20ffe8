import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { BudgetsModule } from '../budgets/budgets.module';
import { ConversationsController } from '../conversations/conversations.controller';
import { EstimatesModule } from '../estimates/estimates.module';
import { EventHub } from '../events/event-hub';
import { EventsModule } from '../events/events.module';
import { PresetsModule } from '../presets/presets.module';
import { CancelService } from './cancel.service';
import { DeliberationsController } from './deliberations.controller';
import { DeliberationsService } from './deliberations.service';
import { RequestValidator } from './request-validator';

/**
 * Deliberations and their conversations: starting one (checked, stored, enqueued), reading it, its
 * event stream (SSE and tickets), cancelling it; /api/conversations. DeliberationsService,
 * CancelService, RequestValidator and the stored events' hub (EventHub: Redis subscription, replay
 * through DeliberationsService) serve batches, Socket.IO, /v1 and MCP too.
 */
@Module({
  imports: [AuthModule, EventsModule, BudgetsModule, PresetsModule, EstimatesModule],
  controllers: [DeliberationsController, ConversationsController],
  providers: [DeliberationsService, CancelService, RequestValidator, EventHub],
  exports: [DeliberationsService, CancelService, RequestValidator, EventHub],
})
export class DeliberationsModule {}

import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DeliberationsModule } from '../deliberations/deliberations.module';
import { EventsModule } from '../events/events.module';
import { ModelsModule } from '../models/models.module';
import { McpController, McpErrorFilter, McpOriginGuard } from './mcp.controller';
import { McpService } from './mcp.service';

/** The MCP server at /mcp (outside /api): the tool table over the same services as /api. */
@Module({
  imports: [AuthModule, DeliberationsModule, EventsModule, ModelsModule],
  controllers: [McpController],
  providers: [McpService, McpOriginGuard, McpErrorFilter],
})
export class McpModule {}

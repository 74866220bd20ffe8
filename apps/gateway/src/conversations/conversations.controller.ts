import { Controller, Delete, Get, HttpCode, Param, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyGuard, CurrentUser } from '../auth/auth.guard';
import { DeliberationsService } from '../deliberations/deliberations.service';

@ApiTags('conversations')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('conversations')
export class ConversationsController {
  constructor(private readonly deliberations: DeliberationsService) {}

  @Get()
  @ApiOperation({ summary: "The user's conversations, most recent first" })
  list(@CurrentUser() userId: string) {
    return this.deliberations.listConversations(userId);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One conversation with its messages, statuses and results' })
  get(@CurrentUser() userId: string, @Param('id') id: string) {
    return this.deliberations.conversation(userId, id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a conversation with everything stored for it' })
  async remove(@CurrentUser() userId: string, @Param('id') id: string): Promise<void> {
    await this.deliberations.deleteConversation(userId, id);
  }
}

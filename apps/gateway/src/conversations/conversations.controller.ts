import { Delete, Get, HttpCode, Param } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { ApiKeyController } from '../auth/api-key-controller';
import { CurrentUser } from '../auth/auth.guard';
import { DeliberationsService } from '../deliberations/deliberations.service';

@ApiKeyController('conversations')
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

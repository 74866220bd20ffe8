import { Body, Get, Headers, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiKeyController } from '../auth/api-key-controller';
import { CurrentUser } from '../auth/auth.guard';
import { OpenAiErrorFilter } from './openai-error.filter';
import { OpenAiService } from './openai.service';

/**
 * OpenAI's chat-completions API over Conclave's modes (`/v1`, outside the `/api` prefix): the
 * same API keys, limits and validation as `/api`, errors in OpenAI's shape. README, "Use Conclave
 * from your tools".
 */
@ApiKeyController('openai-compatible', 'v1')
@UseFilters(OpenAiErrorFilter)
export class OpenAiController {
  constructor(private readonly openai: OpenAiService) {}

  @Get('models')
  @ApiOperation({
    summary:
      'OpenAI-compatible: one model per mode (conclave/<mode>) and one per preset of yours (conclave/preset/<name>)',
  })
  models(@CurrentUser() userId: string) {
    return this.openai.models(userId);
  }

  @Post('chat/completions')
  @ApiOperation({
    summary:
      'OpenAI-compatible: the last user message deliberated by the model’s mode; the answer is its final text',
    description:
      'With `stream: true`, `chat.completion.chunk` events: the panel’s progress as `delta.reasoning_content`, ' +
      'then the final text as it is written; `stream_options.include_usage` adds a last chunk with the usage. ' +
      'A client that disconnects before the end cancels the deliberation; with an `Idempotency-Key` the deliberation ' +
      'runs on for V1_RETRY_GRACE_MS, and a retry with the same key and body reattaches to it (streaming from the ' +
      'start of its progress, or its answer once it has ended). The extra `conclave` field names the ' +
      'deliberation (messageId, web link, failed calls).',
  })
  chat(
    @CurrentUser() userId: string,
    @Body() body: unknown,
    @Req() request: Request,
    @Res() response: Response,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<void> {
    return this.openai.chat(userId, body, idempotencyKey, request, response);
  }
}

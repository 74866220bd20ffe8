import { Body, Controller, Get, Headers, HttpCode, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { DeliberationAccepted, DeliberationView } from '@conclave/contracts';
import type { Request, Response } from 'express';
import { ApiKeyGuard, CurrentUser } from '../auth/auth.guard';
import { EventHub } from '../events/event-hub';
import { CreateDeliberationDto, DeliberationAcceptedDto } from './create-deliberation.dto';
import { DeliberationsService } from './deliberations.service';

const HEARTBEAT_MS = 15_000;

@ApiTags('deliberations')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('deliberations')
export class DeliberationsController {
  constructor(
    private readonly deliberations: DeliberationsService,
    private readonly hub: EventHub,
  ) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({ summary: 'Start a deliberation' })
  @ApiBody({ type: CreateDeliberationDto })
  @ApiAcceptedResponse({ type: DeliberationAcceptedDto })
  start(
    @CurrentUser() userId: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<DeliberationAccepted> {
    return this.deliberations.start(userId, body, idempotencyKey);
  }

  @Get(':messageId')
  @ApiOperation({ summary: "A deliberation's status, usage and result, rebuilt from the stored rows" })
  view(@CurrentUser() userId: string, @Param('messageId') messageId: string): Promise<DeliberationView> {
    return this.deliberations.view(userId, messageId);
  }

  @Get(':messageId/events')
  @ApiOperation({ summary: 'Server-Sent Events: every event after Last-Event-ID, then live ones' })
  async events(
    @CurrentUser() userId: string,
    @Param('messageId') messageId: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const message = await this.deliberations.ownedMessage(userId, messageId);
    const lastEventId = request.headers['last-event-id'] ?? request.query.lastEventId;
    const parsed = Number.parseInt(String(lastEventId ?? '0'), 10);
    const afterSeq = Number.isInteger(parsed) && parsed > 0 ? parsed : 0;
    if (['complete', 'failed', 'cancelled'].includes(message.status) && afterSeq >= message.last_seq) {
      // Nothing more will come; 204 tells EventSource to stop reconnecting.
      response.status(204).end();
      return;
    }
    response.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    response.write(': connected\n\n');
    const heartbeat = setInterval(() => response.write(': ping\n\n'), HEARTBEAT_MS);
    const delivery = this.hub.subscribe(
      messageId,
      afterSeq,
      (event) => response.write(`event: ${event.type}\nid: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`),
      () => {
        clearInterval(heartbeat);
        response.end();
      },
    );
    request.on('close', () => delivery.close());
  }
}

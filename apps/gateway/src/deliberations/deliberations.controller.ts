import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Inject,
  Param,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { isTerminalStatus, type DeliberationAccepted, type DeliberationView } from '@conclave/contracts';
import type { Request, Response } from 'express';
import { apiKeyIdOf, ApiKeyGuard, CurrentUser } from '../auth/auth.guard';
import { EventHub } from '../events/event-hub';
import type { OrderedDelivery } from '../events/ordered-delivery';
import { Outflow, outflowLimits } from '../events/outflow';
import { StreamRegistry, type CloseReason } from '../events/stream-registry';
import { CONFIG } from '@conclave/platform';
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
    private readonly streams: StreamRegistry,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
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
    if (isTerminalStatus(message.status) && afterSeq >= message.lastSeq) {
      // Nothing more will come; 204 tells EventSource to stop reconnecting.
      response.status(204).end();
      return;
    }
    // One of the user's SSE streams and subscriptions on this replica (429 over either cap, before
    // any header is sent), registered under its key: revoking the key ends it.
    let delivery: OrderedDelivery | null = null;
    let ended = false;
    const close = (reason: CloseReason | 'done') => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      outflow.stop();
      stream.release();
      delivery?.close();
      // A client that does not read would keep what is queued for it: drop the connection.
      if (reason === 'slow') response.destroy();
      else if (reason === 'revoked') response.end(': the API key was revoked\n\n');
      else response.end();
    };
    const stream = this.streams.open('sse', userId, apiKeyIdOf(request), (reason) => close(reason));
    const outflow = new Outflow(
      () => response.writableLength,
      outflowLimits(this.config.streams),
      (detail) => stream.close('slow', detail),
      (wake) => {
        response.on('drain', wake);
        return () => response.off('drain', wake);
      },
    );
    response.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    response.write(': connected\n\n');
    const heartbeat = setInterval(() => {
      response.write(': ping\n\n');
      void outflow.room();
    }, HEARTBEAT_MS);
    response.on('close', () => close('done'));
    // The client may have gone while its key and message were looked up.
    if (request.socket.destroyed) return close('done');
    delivery = this.hub.subscribe(
      messageId,
      afterSeq,
      (event) => response.write(`event: ${event.type}\nid: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`),
      () => close('done'),
      () => outflow.room(),
    );
  }
}

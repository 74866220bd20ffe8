import { Body, Get, Headers, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
} from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { isTerminalStatus, type DeliberationView } from '@conclave/contracts';
import type { Request, Response } from 'express';
import { ApiKeyController } from '../auth/api-key-controller';
import { apiKeyIdOf, CurrentUser, identityOf } from '../auth/auth.guard';
import { StreamTickets } from '../auth/stream-tickets';
import { ApiError } from '../common/api-error';
import { EventHub } from '../events/event-hub';
import { LiveHub } from '../events/live-hub';
import type { OrderedDelivery } from '../events/ordered-delivery';
import { responseOutflow, startSse } from '../events/sse';
import { StreamRegistry, type CloseReason } from '../events/stream-registry';
import { CONFIG } from '@conclave/platform';
import { CreateDeliberationDto, DeliberationAcceptedDto } from './create-deliberation.dto';
import { DeliberationsService } from './deliberations.service';
import { CancelService } from './cancel.service';
import { dryRunAsked } from '../estimates/dry-run';
import { DryRunService } from '../estimates/dry-run.service';
import { QueryParams } from '../common/query-params';
import { IsOptional, IsString } from 'class-validator';

class StartQuery {
  @IsOptional() @IsString() dryRun?: string;
}

/** EventSource sends no headers: a stream ticket and the resume point may come in the query. */
class EventsQuery {
  @IsOptional() @IsString() ticket?: string;
  @IsOptional() @IsString() lastEventId?: string;
  @IsOptional() @IsString() deltas?: string;
}

@ApiKeyController('deliberations')
export class DeliberationsController {
  constructor(
    private readonly deliberations: DeliberationsService,
    private readonly cancels: CancelService,
    private readonly hub: EventHub,
    private readonly live: LiveHub,
    private readonly streams: StreamRegistry,
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly dryRuns: DryRunService,
    private readonly tickets: StreamTickets,
  ) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({
    summary: 'Start a deliberation (or, with ?dryRun=true, plan and price it without starting it)',
    description:
      'With `?dryRun=true` the request is validated exactly as a real one (the same 400s, 404s and 409s) ' +
      'but nothing is stored or enqueued: 200 with the planned calls per model and stage and an ' +
      'estimated token and cost range (README, "Cost before and during"). Over the monthly budget a ' +
      'real request answers 402; a dry run says so in `budget.overBudget`.',
  })
  @ApiQuery({ name: 'dryRun', required: false, enum: ['true', 'false', '1', '0'] })
  @ApiBody({ type: CreateDeliberationDto })
  @ApiAcceptedResponse({ type: DeliberationAcceptedDto })
  @ApiOkResponse({ description: 'dryRun=true: the plan and its estimate (DeliberationEstimate)' })
  @QueryParams(StartQuery)
  async start(
    @CurrentUser() userId: string,
    @Req() request: Request,
    @Body() body: unknown,
    @Query('dryRun') dryRun: unknown,
    @Res() response: Response,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<void> {
    if (dryRunAsked(dryRun)) {
      const outcome = await this.deliberations.validateRequest(userId, body);
      if (!outcome.ok) throw ApiError.invalid(outcome.fields);
      response.status(200).json(await this.dryRuns.deliberation(userId, outcome.request));
      return;
    }
    response
      .status(202)
      .json(await this.deliberations.start(userId, body, idempotencyKey, { apiKeyId: apiKeyIdOf(request) }));
  }

  @Post(':messageId/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Stop a running deliberation',
    description:
      'Aborts its model calls in flight and enqueues no further stage. It ends with status `cancelled` and a last event `cancelled { reason }`; what was stored before stays, so the result shows the partial deliberation.',
  })
  @ApiOkResponse({ description: 'The deliberation as stored after the stop (status `cancelled`)' })
  @ApiNotFoundResponse({ description: 'No deliberation of yours has this id' })
  @ApiConflictResponse({ description: 'It has already ended; the message names its status' })
  async cancel(
    @CurrentUser() userId: string,
    @Param('messageId') messageId: string,
  ): Promise<DeliberationView> {
    await this.cancels.cancel(userId, messageId);
    return this.deliberations.view(userId, messageId);
  }

  @Get(':messageId')
  @ApiOperation({ summary: "A deliberation's status, usage and result, rebuilt from the stored rows" })
  view(@CurrentUser() userId: string, @Param('messageId') messageId: string): Promise<DeliberationView> {
    return this.deliberations.view(userId, messageId);
  }

  @Post(':messageId/events/ticket')
  @HttpCode(200)
  @ApiOperation({
    summary: 'A single-use ticket to open the event stream without headers (EventSource)',
    description:
      'Answers `{ ticket, expiresInSeconds }`: open `GET /api/deliberations/:id/events?ticket=<ticket>` ' +
      'within that time. The ticket is good for this deliberation only, once, and not after its API key ' +
      'is revoked. API keys are never accepted in URLs.',
  })
  @ApiNotFoundResponse({ description: 'No deliberation of yours has this id' })
  async eventsTicket(
    @CurrentUser() userId: string,
    @Param('messageId') messageId: string,
    @Req() request: Request,
  ): Promise<{ ticket: string; expiresInSeconds: number }> {
    await this.deliberations.ownedMessage(userId, messageId);
    return this.tickets.issue(identityOf(request) ?? { userId, keyId: null }, messageId);
  }

  @Get(':messageId/events')
  @ApiOperation({
    summary: 'Server-Sent Events: every event after Last-Event-ID, then live ones',
    description:
      'Authenticated by the Authorization header, or (EventSource) by `?ticket=` from ' +
      '`POST /api/deliberations/:id/events/ticket`: single use, this deliberation only.',
  })
  @QueryParams(EventsQuery)
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
    const deltas = deltasAsked(request.query.deltas);
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
      stopHeartbeat();
      outflow.stop();
      stream.release();
      delivery?.close();
      // A client that does not read would keep what is queued for it: drop the connection.
      if (reason === 'slow') response.destroy();
      else if (reason === 'revoked') response.end(': the API key was revoked\n\n');
      else response.end();
    };
    const stream = this.streams.open('sse', userId, apiKeyIdOf(request), (reason) => close(reason));
    const outflow = responseOutflow(response, this.config.streams, (detail) => stream.close('slow', detail));
    const stopHeartbeat = startSse(response, ': ping\n\n', () => void outflow.room());
    response.write(': connected\n\n');
    response.on('close', () => close('done'));
    // The client may have gone while its key and message were looked up.
    if (request.socket.destroyed) return close('done');
    // Live deltas (`?deltas=1`) have no `id:` line: Last-Event-ID stays the last stored seq.
    const watcher = deltas
      ? this.live.watcher(
          messageId,
          (event) => response.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`),
          () => outflow.room(),
        )
      : null;
    delivery = this.hub.subscribe(
      messageId,
      afterSeq,
      (event) => {
        watcher?.beforeDelivery(event);
        response.write(`event: ${event.type}\nid: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
        watcher?.delivered(event);
      },
      () => {
        watcher?.close();
        close('done');
      },
      () => outflow.room(),
    );
    watcher?.follow(delivery);
  }
}

/** `?deltas=1` (or `true`) asks for live deltas; absent, `0` or `false` does not; anything else is a 400. */
function deltasAsked(value: unknown): boolean {
  if (value === undefined || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw ApiError.invalid({ deltas: 'must be 1 or true (or 0, false)' });
}

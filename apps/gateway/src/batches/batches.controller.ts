import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Query,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { BatchAccepted, BatchView } from '@conclave/contracts';
import type { Request, Response } from 'express';
import { ApiError } from '../common/api-error';
import { ApiKeyGuard, CurrentUser } from '../auth/auth.guard';
import { CSV_HEADER_LINE, csvRecords } from './batch-export';
import { itemsFromCsv, itemsFromJsonl } from './batch-input';
import { BatchesService } from './batches.service';

/** Query parameters of an upload, as the JSON envelope would carry them. */
function uploadEnvelope(query: Record<string, unknown>): Record<string, unknown> {
  const envelope: Record<string, unknown> = {};
  if (typeof query.name === 'string') envelope.name = query.name;
  if (typeof query.concurrency === 'string') envelope.concurrency = Number(query.concurrency);
  if (typeof query.generateTitles === 'string') envelope.generateTitles = query.generateTitles === 'true';
  if (typeof query.defaults === 'string') {
    try {
      envelope.defaults = JSON.parse(query.defaults);
    } catch {
      throw ApiError.invalid({ defaults: 'the defaults query parameter must be JSON' });
    }
  }
  if (typeof query.mode === 'string') {
    const defaults = (envelope.defaults ?? {}) as Record<string, unknown>;
    envelope.defaults = { ...defaults, mode: query.mode };
  }
  return envelope;
}

@ApiTags('batches')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('batches')
export class BatchesController {
  constructor(private readonly batches: BatchesService) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Submit a batch: JSON { name?, defaults?, items, concurrency?, generateTitles? }, or a CSV / JSONL upload',
  })
  submit(
    @CurrentUser() userId: string,
    @Req() request: Request,
    @Body() body: unknown,
    @Query() query: Record<string, unknown>,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<BatchAccepted> {
    if (typeof body === 'string') {
      const type = request.headers['content-type'] ?? '';
      const parsed = /csv/.test(type) ? itemsFromCsv(body) : itemsFromJsonl(body);
      if ('error' in parsed) throw ApiError.invalid({ body: parsed.error });
      return this.batches.submit(userId, uploadEnvelope(query), parsed.items, idempotencyKey);
    }
    return this.batches.submit(userId, body, undefined, idempotencyKey);
  }

  @Get()
  @ApiOperation({ summary: "The user's batches, newest first" })
  list(@CurrentUser() userId: string): Promise<BatchView[]> {
    return this.batches.list(userId);
  }

  @Get(':id')
  @ApiOperation({ summary: 'A batch: status, counts by state, usage, ETA' })
  view(@CurrentUser() userId: string, @Param('id') id: string): Promise<BatchView> {
    return this.batches.view(userId, id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel: queued items stop at once, running ones finish' })
  cancel(@CurrentUser() userId: string, @Param('id') id: string): Promise<BatchView> {
    return this.batches.cancel(userId, id);
  }

  @Get(':id/results')
  @ApiOperation({ summary: 'One line per item in submission order (?format=jsonl|csv), streamed' })
  async results(
    @CurrentUser() userId: string,
    @Param('id') id: string,
    @Query('format') format: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const kind = format ?? 'jsonl';
    if (kind !== 'jsonl' && kind !== 'csv') throw ApiError.invalid({ format: 'format must be jsonl or csv' });
    const pages = this.batches.results(userId, id);
    const first = await pages.next(); // ownership is checked before anything is sent
    response.status(200);
    response.setHeader(
      'Content-Type',
      kind === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    );
    response.setHeader('Content-Disposition', `attachment; filename="batch-${id}.${kind}"`);
    if (kind === 'csv') response.write(CSV_HEADER_LINE);
    const write = (chunk: string) =>
      new Promise<void>((resolve) =>
        response.write(chunk) ? resolve() : response.once('drain', () => resolve()),
      );
    for (let page = first; !page.done; page = await pages.next()) {
      const lines = page.value;
      // JSONL is data for programs, not a sheet: its values stay exactly as stored.
      await write(kind === 'csv' ? csvRecords(lines) : lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    }
    response.end();
  }
}

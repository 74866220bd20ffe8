import { Body, Delete, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiQuery } from '@nestjs/swagger';
import type {
  BatchAccepted,
  BatchComparison,
  BatchEstimate,
  BatchReport,
  BatchRetryAccepted,
  BatchView,
} from '@conclave/contracts';
import type { Request, Response } from 'express';
import { ApiKeyController } from '../auth/api-key-controller';
import { ApiError } from '../common/api-error';
import { apiKeyIdOf, CurrentUser } from '../auth/auth.guard';
import { CSV_HEADER_LINE, GRADED_CSV_HEADER_LINE, csvRecords } from './batch-export';
import { LONG_CSV_HEADER_LINE, longCsvRecords, longJsonl } from './batch-long-export';
import { itemsFromCsv, itemsFromJsonl } from './batch-input';
import { BatchReportService } from './batch-report';
import { comparisonMarkdown, reportMarkdown } from './report-markdown';
import { BatchesService } from './batches.service';
import { dryRunAsked } from '../estimates/dry-run';
import { QueryParams } from '../common/query-params';
import { IsIn, IsOptional, IsString } from 'class-validator';

/** A submission's query: `dryRun`, and for a CSV / JSONL upload the envelope's fields. */
class SubmitQuery {
  @IsOptional() @IsString() dryRun?: string;
  @IsOptional() @IsString() name?: string;
  @IsOptional() @IsString() concurrency?: string;
  @IsOptional()
  @IsIn(['true', 'false'], { message: 'generateTitles must be true or false' })
  generateTitles?: string;
  @IsOptional() @IsString() maxCostUsd?: string;
  @IsOptional() @IsString() defaults?: string;
  @IsOptional() @IsString() mode?: string;
}

/** The upload fields of SubmitQuery: with a JSON body they belong in the body. */
const UPLOAD_QUERY = ['name', 'concurrency', 'generateTitles', 'maxCostUsd', 'defaults', 'mode'] as const;

class CompareQuery {
  @IsOptional() @IsString() a?: string;
  @IsOptional() @IsString() b?: string;
  @IsOptional() @IsString() format?: string;
}

class FormatQuery {
  @IsOptional() @IsString() format?: string;
}

class ResultsQuery extends FormatQuery {
  @IsOptional() @IsIn(['item', 'long'], { message: 'shape must be item or long' }) shape?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Query parameters of an upload, as the JSON envelope would carry them. */
function uploadEnvelope(query: Record<string, unknown>): Record<string, unknown> {
  const envelope: Record<string, unknown> = {};
  if (typeof query.name === 'string') envelope.name = query.name;
  if (typeof query.concurrency === 'string') envelope.concurrency = Number(query.concurrency);
  if (typeof query.generateTitles === 'string') envelope.generateTitles = query.generateTitles === 'true';
  // A number that is not one stays a string, for parseBatch to name.
  if (typeof query.maxCostUsd === 'string')
    envelope.maxCostUsd = /^\s*\d+(\.\d+)?\s*$/.test(query.maxCostUsd)
      ? Number(query.maxCostUsd)
      : query.maxCostUsd;
  if (typeof query.defaults === 'string') {
    let defaults: unknown;
    try {
      defaults = JSON.parse(query.defaults);
    } catch {
      throw ApiError.invalid({ defaults: 'the defaults query parameter must be JSON' });
    }
    // `[]` or `null` would otherwise read as no defaults at all, and run on the operator's roster.
    if (!isObject(defaults))
      throw ApiError.invalid({ defaults: 'the defaults query parameter must be a JSON object ({…})' });
    envelope.defaults = defaults;
  }
  if (typeof query.mode === 'string') {
    const defaults = (envelope.defaults ?? {}) as Record<string, unknown>;
    envelope.defaults = { ...defaults, mode: query.mode };
  }
  return envelope;
}

/** `format` of a report or comparison: JSON (the default) or Markdown. */
function reportFormat(format: unknown): boolean {
  if (format === undefined || format === 'json') return false;
  if (format === 'md' || format === 'markdown') return true;
  throw ApiError.invalid({ format: 'format must be json or md' });
}

@ApiKeyController('batches')
export class BatchesController {
  constructor(
    private readonly batches: BatchesService,
    private readonly reports: BatchReportService,
  ) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Submit a batch: JSON { name?, defaults?, items, concurrency?, generateTitles?, maxCostUsd? }, or a CSV / JSONL upload (envelope fields as query parameters); ?dryRun=true plans and prices it instead (200, nothing stored)',
  })
  @ApiQuery({ name: 'dryRun', required: false, enum: ['true', 'false', '1', '0'] })
  @QueryParams(SubmitQuery)
  async submit(
    @CurrentUser() userId: string,
    @Req() request: Request,
    @Body() body: unknown,
    @Query() query: Record<string, unknown>,
    @Res() response: Response,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<void> {
    // dryRun=true: validated as a real submission, nothing stored or enqueued, 200 with the estimate.
    const dryRun = dryRunAsked(query.dryRun);
    let answer: BatchAccepted | BatchEstimate;
    if (typeof body === 'string') {
      const type = request.headers['content-type'] ?? '';
      const parsed = /csv/.test(type) ? itemsFromCsv(body) : itemsFromJsonl(body);
      if ('error' in parsed) throw ApiError.invalid({ body: parsed.error });
      answer = await this.batches.submit(
        userId,
        uploadEnvelope(query),
        parsed.items,
        idempotencyKey,
        dryRun,
        apiKeyIdOf(request),
      );
    } else {
      const misplaced = UPLOAD_QUERY.filter((name) => name in query);
      if (misplaced.length > 0)
        throw ApiError.invalid(
          Object.fromEntries(
            misplaced.map((name) => [
              name,
              `${name} as a query parameter is for CSV / JSONL uploads: put it in the JSON body`,
            ]),
          ),
        );
      answer = await this.batches.submit(
        userId,
        body,
        undefined,
        idempotencyKey,
        dryRun,
        apiKeyIdOf(request),
      );
    }
    response.status(dryRun ? 200 : 202).json(answer);
  }

  @Get()
  @ApiOperation({ summary: "The user's batches, newest first" })
  list(@CurrentUser() userId: string): Promise<BatchView[]> {
    return this.batches.list(userId);
  }

  // Declared before `:id`, which would otherwise take "compare" for a batch id.
  @Get('compare')
  @ApiOperation({
    summary:
      'Compare two batches of the same mode on the same items (?a=…&b=…&format=json|md): differences with paired bootstrap intervals, flipped outcomes, cost and latency',
  })
  @QueryParams(CompareQuery)
  async compare(
    @CurrentUser() userId: string,
    @Query('a') a: unknown,
    @Query('b') b: unknown,
    @Query('format') format: unknown,
    @Res({ passthrough: true }) response: Response,
  ): Promise<BatchComparison | string> {
    const markdown = reportFormat(format);
    const comparison = await this.reports.compare(userId, a, b);
    if (!markdown) return comparison;
    response.setHeader('Content-Type', 'text/markdown; charset=utf-8');
    return comparisonMarkdown(comparison);
  }

  @Get(':id')
  @ApiOperation({ summary: 'A batch: status, counts by state, usage, ETA' })
  view(@CurrentUser() userId: string, @Param('id') id: string): Promise<BatchView> {
    return this.batches.view(userId, id);
  }

  @Post(':id/retry-failed')
  @HttpCode(202)
  @ApiOperation({
    summary:
      "Re-run the finished batch's failed items as new attempts (409 while it runs, or with none failed)",
    description:
      "Each item whose latest attempt failed gets a new attempt (a new conversation; the item's `attempt` goes " +
      'up by one, the failed attempt is kept); the batch runs again and ends with `batch_complete` once more. ' +
      "Exports and the batch view show each item's latest attempt. 402 over the monthly budget; 409 when the " +
      "batch's maxCostUsd is already spent.",
  })
  retryFailed(
    @CurrentUser() userId: string,
    @Req() request: Request,
    @Param('id') id: string,
  ): Promise<BatchRetryAccepted> {
    return this.batches.retryFailed(userId, id, apiKeyIdOf(request));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel: queued items stop at once, running ones finish' })
  cancel(@CurrentUser() userId: string, @Param('id') id: string): Promise<BatchView> {
    return this.batches.cancel(userId, id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    summary:
      'Delete a finished batch with its items and all their data (conversations, messages, stage rows, model calls, events); 409 while it runs',
    description:
      'One transaction: the batch, every attempt of every item, and everything stored for them. What their model calls ' +
      "cost stays in the month's spend (budgets). 404 for a batch that is not the user's (or already deleted); 409 while " +
      'it is queued or running (cancel it with POST /api/batches/:id/cancel, then delete it once it has finished), and ' +
      "while a follow-up turn in one of its items' conversations runs.",
  })
  async remove(@CurrentUser() userId: string, @Param('id') id: string): Promise<void> {
    await this.batches.remove(userId, id);
  }

  @Get(':id/report')
  @ApiOperation({
    summary:
      "A batch's report from its stored rows (?format=json|md): per-mode statistics with intervals, agreement, reference agreement, usage, failures; partial while running",
  })
  @QueryParams(FormatQuery)
  async report(
    @CurrentUser() userId: string,
    @Param('id') id: string,
    @Query('format') format: unknown,
    @Res({ passthrough: true }) response: Response,
  ): Promise<BatchReport | string> {
    const markdown = reportFormat(format);
    const report = await this.reports.report(userId, id);
    if (!markdown) return report;
    response.setHeader('Content-Type', 'text/markdown; charset=utf-8');
    return reportMarkdown(report);
  }

  @Get(':id/results')
  @ApiOperation({
    summary:
      'One line per item in submission order (?format=jsonl|csv), streamed; ?shape=long: one row per attempt, model call and judgement',
    description:
      '`shape=item` (the default): one line per item (its latest attempt) with its key and reference. `shape=long`: ' +
      'the long format, enough to recompute every figure of the batch report: a row per item attempt (timestamps, ' +
      'duration, error), per model call (stage, model, ok, tokens, cost, latency) and per judgement read from the ' +
      'stage rows as the report reads them (council ranking places, votes with the label shown, debate revisions, ' +
      "jury scores and verdicts, Delphi estimates and rounds, each item's outcome); every row carries the item's " +
      "index, key, reference, attempt and status. CSV cells that a spreadsheet would read as a formula start with `'`.",
  })
  @ApiQuery({ name: 'format', required: false, enum: ['jsonl', 'csv'] })
  @ApiQuery({ name: 'shape', required: false, enum: ['item', 'long'] })
  @QueryParams(ResultsQuery)
  async results(
    @CurrentUser() userId: string,
    @Param('id') id: string,
    @Query('format') format: string | undefined,
    @Query('shape') shape: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const kind = format ?? 'jsonl';
    if (kind !== 'jsonl' && kind !== 'csv') throw ApiError.invalid({ format: 'format must be jsonl or csv' });
    if (shape === 'long') return this.longResults(userId, id, kind, response);
    const pages = this.batches.results(userId, id);
    const first = await pages.next(); // ownership is checked before anything is sent
    response.status(200);
    response.setHeader(
      'Content-Type',
      kind === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    );
    response.setHeader('Content-Disposition', `attachment; filename="batch-${id}.${kind}"`);
    // A batch with graded items has the grade columns (issue 37); an ungraded one's CSV is as before.
    const graded = kind === 'csv' && (await this.batches.hasGradedItems(id));
    if (kind === 'csv') response.write(graded ? GRADED_CSV_HEADER_LINE : CSV_HEADER_LINE);
    const write = (chunk: string) =>
      new Promise<void>((resolve) =>
        response.write(chunk) ? resolve() : response.once('drain', () => resolve()),
      );
    for (let page = first; !page.done; page = await pages.next()) {
      const lines = page.value;
      // JSONL is data for programs, not a sheet: its values stay exactly as stored.
      await write(
        kind === 'csv' ? csvRecords(lines, graded) : lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
      );
    }
    response.end();
  }

  /** The long-format export, streamed as the per-item one is. */
  private async longResults(
    userId: string,
    id: string,
    kind: 'jsonl' | 'csv',
    response: Response,
  ): Promise<void> {
    const pages = await this.reports.longExport(userId, id); // ownership is checked before anything is sent
    const first = await pages.next(); // and the first page read
    response.status(200);
    response.setHeader(
      'Content-Type',
      kind === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    );
    response.setHeader('Content-Disposition', `attachment; filename="batch-${id}-long.${kind}"`);
    if (kind === 'csv') response.write(LONG_CSV_HEADER_LINE);
    for (let page = first; !page.done; page = await pages.next()) {
      const chunk = kind === 'csv' ? longCsvRecords(page.value) : longJsonl(page.value);
      if (!response.write(chunk))
        await new Promise<void>((resolve) => response.once('drain', () => resolve()));
    }
    response.end();
  }
}

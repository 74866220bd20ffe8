import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { isUuid, type BatchAccepted, type BatchResultLine, type BatchView } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import {
  BatchDispatcher,
  BatchesRepository,
  DeliberationsRepository,
  IdempotencyRepository,
  UsageRepository,
  type Batch,
} from '@conclave/persistence';
import { ApiError } from '../common/api-error';
import { IdempotencyRace, idempotencyContext, previousResponse } from '../common/idempotency';
import { RateLimiter } from '../common/rate-limiter';
import { RequestValidator, type ValidatedRequest } from '../deliberations/request-validator';
import { CONFIG } from '@conclave/platform';
import { parseBatch, withDefaults } from './batch-input';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const RESULTS_PAGE = 500;

@Injectable()
export class BatchesService {
  private readonly logger = new Logger('batches');

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly batches: BatchesRepository,
    private readonly deliberations: DeliberationsRepository,
    private readonly usage: UsageRepository,
    private readonly idempotencyKeys: IdempotencyRepository,
    private readonly dispatcher: BatchDispatcher,
    private readonly validator: RequestValidator,
    private readonly limiter: RateLimiter,
  ) {}

  async submit(
    userId: string,
    body: unknown,
    uploaded: Record<string, unknown>[] | undefined,
    idempotencyKey: string | string[] | undefined,
  ): Promise<BatchAccepted> {
    const idempotency = idempotencyContext(userId, 'batch', idempotencyKey, { body, uploaded });
    if (idempotency) {
      const earlier = await previousResponse<BatchAccepted>(this.idempotencyKeys, idempotency);
      if (earlier) return earlier;
    }
    const parsed = parseBatch(body, uploaded);
    if (!parsed.ok) throw ApiError.invalid(parsed.fields);
    const { batch } = parsed;

    // Every item is checked before anything is stored: one bad item rejects the whole batch.
    const requests: ValidatedRequest[] = [];
    const fields: Record<string, string> = {};
    const badItems: number[] = [];
    for (let i = 0; i < batch.items.length; i++) {
      const item = withDefaults(batch.defaults, batch.items[i]);
      if (item.conversationId !== undefined) {
        fields[`items[${i}].conversationId`] = 'batch items start new conversations';
        badItems.push(i);
        continue;
      }
      const outcome = await this.validator.validate(item);
      if (outcome.ok) requests.push(outcome.request);
      else {
        badItems.push(i);
        for (const [field, message] of Object.entries(outcome.fields))
          fields[`items[${i}].${field}`] = message;
      }
    }
    if (badItems.length > 0) {
      const shown =
        badItems.slice(0, 20).join(', ') + (badItems.length > 20 ? `, … (${badItems.length} in all)` : '');
      throw new ApiError(
        400,
        `${badItems.length} of ${batch.items.length} items are invalid: items ${shown}`,
        fields,
      );
    }

    const active = await this.batches.activeCount(userId);
    const allowed = this.config.abuse.activeBatchesPerUser;
    if (active >= allowed) {
      throw new ApiError(
        429,
        `You have ${active} batches queued or running, the most allowed at once is ${allowed}: wait for one to finish or cancel one`,
      );
    }
    // Items are deliberations too: each takes one from the key's hourly batch-item budget.
    await this.limiter.take(userId, 'batchItems', requests.length);

    let batchId: string;
    try {
      batchId = await this.batches.create(
        {
          userId,
          name: batch.name,
          concurrency: batch.concurrency,
          generateTitles: batch.generateTitles,
          defaults: batch.defaults,
          items: requests.map((r) => ({
            mode: r.mode,
            userContent: r.definition.userContent?.(r.question, r.config) ?? r.question,
            config: r.config,
            firstStage: r.definition.firstStage,
          })),
        },
        idempotency,
      );
    } catch (error) {
      if (error instanceof IdempotencyRace && idempotency) {
        const earlier = await previousResponse<BatchAccepted>(this.idempotencyKeys, idempotency);
        if (earlier) return earlier;
      }
      throw error;
    }
    // Stored first; if the queue is down now, the workers' reconciler starts the batch later.
    await this.dispatcher
      .dispatch(batchId)
      .catch((error: unknown) => this.logger.warn(`batch ${batchId}: ${String(error)}`));
    return { batchId, total: requests.length, status: 'queued' };
  }

  private async ownedBatch(userId: string, batchId: string): Promise<Batch> {
    const batch = isUuid(batchId) ? await this.batches.owned(userId, batchId) : null;
    if (!batch) throw ApiError.notFound(`batch ${batchId}`);
    return batch;
  }

  async assertOwned(userId: string, batchId: string): Promise<void> {
    await this.ownedBatch(userId, batchId);
  }

  async view(userId: string, batchId: string): Promise<BatchView> {
    return this.snapshot(await this.ownedBatch(userId, batchId));
  }

  async snapshotById(batchId: string): Promise<BatchView | null> {
    const batch = await this.batches.find(batchId);
    return batch ? this.snapshot(batch) : null;
  }

  private async snapshot(batch: Batch): Promise<BatchView> {
    const counts = await this.batches.itemCounts(batch.id);
    const usage = await this.usage.ofBatch(batch.id);
    const view: BatchView = {
      batchId: batch.id,
      name: batch.name,
      status: batch.status,
      concurrency: batch.concurrency,
      total: batch.total,
      queued: counts.queued ?? 0,
      running: counts.running ?? 0,
      complete: counts.complete ?? 0,
      failed: counts.failed ?? 0,
      cancelled: counts.cancelled ?? 0,
      createdAt: iso(batch.createdAt) ?? '',
      startedAt: iso(batch.startedAt),
      finishedAt: iso(batch.finishedAt),
      usage,
      etaSeconds: null,
    };
    const done = view.complete + view.failed;
    const remaining = view.queued + view.running;
    if (batch.finishedAt || remaining === 0) view.etaSeconds = 0;
    else if (batch.startedAt && done > 0 && batch.status === 'running') {
      const elapsed = (Date.now() - new Date(batch.startedAt).getTime()) / 1000;
      view.etaSeconds = Math.round((remaining * elapsed) / done);
    }
    return view;
  }

  async list(userId: string): Promise<BatchView[]> {
    const batches = await this.batches.list(userId);
    return Promise.all(batches.map((batch) => this.snapshot(batch)));
  }

  async cancel(userId: string, batchId: string): Promise<BatchView> {
    const batch = await this.ownedBatch(userId, batchId);
    if (batch.status === 'queued' || batch.status === 'running') {
      await this.batches.markCancelled(batchId);
      // Queued items stop at once; running ones finish. An item a worker holds at this instant is
      // skipped (see cancelQueuedItems); the next pass finds it either running or still queued.
      for (let pass = 0; pass < 5; pass++) {
        const cancelled = await this.batches.cancelQueuedItems(batchId);
        const queued = await this.batches.queuedItemCount(batchId);
        if (queued === 0 || (cancelled === 0 && pass > 0)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await this.dispatcher.closeIfDone(batchId);
      await this.dispatcher.notify(batchId);
    }
    return this.view(userId, batchId);
  }

  /** One line per item in submission order, read page by page so memory stays flat. */
  async *results(userId: string, batchId: string): AsyncGenerator<BatchResultLine[]> {
    await this.ownedBatch(userId, batchId);
    let after = -1;
    for (;;) {
      const page = await this.batches.itemsPage(batchId, after, RESULTS_PAGE);
      if (page.length === 0) return;
      const rowsOf = await this.deliberations.stageRowsOf(page.map((item) => item.messageId));
      yield page.map((item) => {
        const definition = modeDefinition(item.mode);
        const rows = rowsOf.get(item.messageId) ?? [];
        const headline = definition ? definition.headline(definition.load(rows, item.config, null)) : null;
        return {
          index: item.index,
          messageId: item.messageId,
          conversationId: item.conversationId,
          mode: item.mode,
          status: item.status,
          error: item.error,
          question: item.question,
          answer: headline?.answer ?? null,
          headline: headline?.details ?? null,
          resultUrl: `/api/deliberations/${item.messageId}`,
        };
      });
      after = page[page.length - 1].index;
    }
  }
}

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  deliberationGrades,
  isUuid,
  type BatchAccepted,
  type BatchEstimate,
  type BatchResultLine,
  type BatchRetryAccepted,
  type BatchView,
  type ModeName,
  type Preset,
} from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { degradationOf, partialOf, startedModelOf, uncommittedStage } from '@conclave/outcomes';
import {
  BatchDispatcher,
  BatchRetriesRepository,
  BatchesRepository,
  DeliberationsRepository,
  IdempotencyRepository,
  LifecycleRepository,
  UsageRepository,
  WorkStops,
  type Batch,
} from '@conclave/persistence';
import { ApiError, queueUnavailable } from '../common/api-error';
import { IdempotencyRace, idempotencyContext, previousResponse } from '../common/idempotency';
import { RateLimiter } from '../common/rate-limiter';
import { RequestValidator, type ValidatedRequest } from '../deliberations/request-validator';
import { CONFIG } from '@conclave/platform';
import { BudgetsService, usd } from '../budgets/budgets.service';
import { DryRunService } from '../estimates/dry-run.service';
import { PresetsService } from '../presets/presets.service';
import { itemTexts } from './batch-export';
import {
  checkAnnotations,
  parseBatch,
  splitAnnotations,
  withDefaults,
  type ItemAnnotations,
} from './batch-input';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const RESULTS_PAGE = 500;
/** What a batch's cancel records on each item it stops. */
const BATCH_CANCEL_REASON = 'The batch was cancelled.';

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
    private readonly stops: WorkStops,
    private readonly budgets: BudgetsService,
    private readonly dryRuns: DryRunService,
    private readonly retries: BatchRetriesRepository,
    private readonly presets: PresetsService,
    private readonly lifecycle: LifecycleRepository,
  ) {}

  async submit(
    userId: string,
    body: unknown,
    uploaded: Record<string, unknown>[] | undefined,
    idempotencyKey: string | string[] | undefined,
    dryRun = false,
    apiKeyId: string | null = null,
  ): Promise<BatchAccepted | BatchEstimate> {
    // A dry run stores nothing, so it neither answers from nor records an idempotency key.
    const idempotency = dryRun
      ? null
      : idempotencyContext(userId, 'batch', idempotencyKey, { body, uploaded });
    if (idempotency) {
      const earlier = await previousResponse<BatchAccepted>(this.idempotencyKeys, idempotency);
      if (earlier) return earlier;
    }
    const parsed = parseBatch(body, uploaded);
    if (!parsed.ok) throw ApiError.invalid(parsed.fields);
    const { batch } = parsed;

    // Every item is checked before anything is stored: one bad item rejects the whole batch.
    const requests: ValidatedRequest[] = [];
    // Each item's report fields (`reference`, `key`), beside its request; keys seen so far.
    const annotations: ItemAnnotations[] = [];
    const keys = new Map<string, number>();
    const fields: Record<string, string> = {};
    const badItems: number[] = [];
    // An item (or the batch's defaults) may name a preset: looked up once per name.
    const presetCache = new Map<string, Preset | null>();
    for (let i = 0; i < batch.items.length; i++) {
      const { request: item, annotations: raw } = splitAnnotations(
        withDefaults(batch.defaults, batch.items[i]),
      );
      if (item.conversationId !== undefined) {
        fields[`items[${i}].conversationId`] = 'batch items start new conversations';
        badItems.push(i);
        continue;
      }
      const merged = await this.presets.resolve(userId, item, presetCache);
      const outcome = merged.ok ? await this.validator.validate(merged.body) : merged;
      // The reference is checked against the item's mode and roster, so only once its request is valid.
      const checked = outcome.ok ? checkAnnotations(raw, outcome.request, keys, i) : outcome;
      if (outcome.ok && checked.ok) {
        requests.push(outcome.request);
        annotations.push(checked.annotations);
      } else {
        badItems.push(i);
        for (const [field, message] of Object.entries(checked.ok ? {} : checked.fields))
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
    if (dryRun) {
      return this.dryRuns.batch(userId, requests, {
        generateTitles: batch.generateTitles,
        maxCostUsd: batch.maxCostUsd,
      });
    }
    await this.budgets.assertWithinBudget(userId, 'the batch');

    const active = await this.batches.activeCount(userId);
    const allowed = this.config.abuse.activeBatchesPerUser;
    if (active >= allowed) {
      throw new ApiError(
        429,
        `You have ${active} batches queued or running, the most allowed at once is ${allowed}: wait for one to finish or cancel one`,
      );
    }
    // Items are deliberations too: each takes one from the key's hourly batch-item budget (given
    // back below when the batch is refused after all: nothing of it ran).
    const taken = await this.limiter.takeReturnable(userId, 'batchItems', requests.length);
    const refused = (error: unknown): never => {
      void this.limiter.giveBack(taken);
      throw error;
    };

    let batchId: string;
    try {
      // Stored without its idempotency key: admit records it once the batch is kept.
      batchId = await this.batches.create(
        {
          userId,
          name: batch.name,
          concurrency: batch.concurrency,
          generateTitles: batch.generateTitles,
          defaults: batch.defaults,
          maxCostUsd: batch.maxCostUsd,
          apiKeyId,
          items: requests.map((r, i) => ({
            ...annotations[i],
            ...(r.grading ? { grading: r.grading } : {}),
            mode: r.mode,
            userContent: r.definition.userContent?.(r.question, r.config) ?? r.question,
            ...(r.definition.userContent ? { question: r.question } : {}),
            config: r.config,
            firstStage: r.definition.firstStage,
          })),
        },
        null,
      );
    } catch (error) {
      return refused(error);
    }
    const accepted: BatchAccepted = { batchId, total: requests.length, status: 'queued' };
    // Then its key recorded and its first items enqueued, in one transaction that a twin request
    // with the same key waits for (BatchesRepository.admit). A queue that cannot take them refuses
    // the batch as it refuses a single deliberation (503, Retry-After): the batch and its key are
    // taken back, nothing runs, and the twin is answered as a fresh request, never with this batch.
    let admission: Awaited<ReturnType<BatchDispatcher['admit']>>;
    try {
      admission = await this.dispatcher.admit(batchId, accepted, idempotency);
    } catch (error) {
      // PostgreSQL failed before the outcome was committed: the batch is stored without its key and
      // without a committed dispatch (a job enqueued before a failed commit finds no item once it
      // is taken back).
      this.logger.error(`could not admit batch ${batchId}: ${String(error)}`);
      const discarded = await this.batches.discard(batchId).then(
        () => true,
        (discardError: unknown) => {
          this.logger.error(`could not take back batch ${batchId}, kept: ${String(discardError)}`);
          return false;
        },
      );
      if (discarded) return refused(error);
      return accepted;
    }
    if (admission.kind === 'twin' && idempotency) {
      // A twin request with the same key was admitted first: its answer (this batch is gone).
      void this.limiter.giveBack(taken);
      const earlier = await previousResponse<BatchAccepted>(this.idempotencyKeys, idempotency);
      if (earlier) return earlier;
      throw new IdempotencyRace();
    }
    if (admission.kind === 'discarded') {
      this.logger.error(`could not enqueue batch ${batchId}: ${String(admission.error)}`);
      return refused(queueUnavailable());
    }
    if (admission.kind === 'kept') {
      // A batch that cannot be taken back stays stored and will run (the workers' reconciler starts
      // it once the queue is back): it is accepted, never refused as if nothing had been kept.
      this.logger.error(`could not take back batch ${batchId}, kept: ${String(admission.error)}`);
    }
    return accepted;
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
    const retriedItems = await this.batches.retriedCount(batch.id);
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
      maxCostUsd: batch.maxCostUsd,
      retriedItems,
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
    // Out of budget, a batch starts nothing more, but the items it had started may still run.
    const outOfBudget = batch.status === 'budget_exhausted' && batch.finishedAt === null;
    if (batch.status === 'queued' || batch.status === 'running' || outOfBudget) {
      // Under the batch's lock: no item is dispatched after this. Queued items stop at once, in one
      // statement; running ones are stopped one by one as a user's cancel stops a deliberation:
      // event `cancelled`, their calls aborted in every worker (WorkStops.cancelBatch).
      await this.stops.cancelBatch(batchId, BATCH_CANCEL_REASON);
    }
    return this.view(userId, batchId);
  }

  /**
   * DELETE /api/batches/:id: the finished batch, its items (every attempt) and all their data —
   * conversations, messages, stage rows, model calls, events — in one transaction; what their
   * calls cost stays in the month's spend. 404 when the user has no such batch; 409 while it has
   * not finished (with how to stop it), or while a follow-up turn in one of its items runs.
   */
  async remove(userId: string, batchId: string): Promise<void> {
    if (!isUuid(batchId)) throw ApiError.notFound(`batch ${batchId}`);
    const outcome = await this.lifecycle.deleteBatch(userId, batchId);
    if (outcome.kind === 'missing') throw ApiError.notFound(`batch ${batchId}`);
    if (outcome.kind === 'unfinished') {
      throw new ApiError(
        409,
        outcome.status === 'queued' || outcome.status === 'running'
          ? `batch ${batchId} is ${outcome.status}: cancel it first (POST /api/batches/${batchId}/cancel), then delete it once it has finished`
          : `batch ${batchId} is ${outcome.status}, but items it had started are still running: delete it once they have finished (GET /api/batches/${batchId} then shows finishedAt)`,
      );
    }
    if (outcome.kind === 'follow-up-running') {
      throw new ApiError(
        409,
        `a follow-up deliberation in one of batch ${batchId}'s conversations is still running: let it finish or cancel it, then delete the batch`,
      );
    }
    const { removed } = outcome;
    this.logger.log(
      `batch ${batchId} deleted: ${removed.conversations} conversations, ${removed.messages} messages, ` +
        `${removed.stage_rows} stage rows, ${removed.model_calls} model calls, ${removed.events} events`,
    );
  }

  /**
   * POST /api/batches/:id/retry-failed: each item whose latest attempt failed runs again as a new
   * attempt (BatchRetriesRepository), and the batch runs again. 409 while it runs, when none
   * failed, or when its maxCostUsd is spent; 402 over the user's monthly budget; 429 / 400 when the
   * items would run past RATE_LIMIT_BATCH_ITEMS_PER_HOUR, as a submission of that many items.
   */
  async retryFailed(
    userId: string,
    batchId: string,
    apiKeyId: string | null = null,
  ): Promise<BatchRetryAccepted> {
    await this.ownedBatch(userId, batchId);
    await this.budgets.assertWithinBudget(userId, 'the retry');
    const firstStageOf = (mode: ModeName) => {
      const definition = modeDefinition(mode);
      if (!definition)
        throw new ApiError(409, `mode ${mode} is not available in this version: its items cannot be retried`);
      return definition.firstStage;
    };
    // Each item run again is a batch item like any other: it takes from the hourly item limit
    // (given back when the retry is refused after all: nothing of it ran).
    let taken: Awaited<ReturnType<RateLimiter['takeReturnable']>> = null;
    // Its first attempts are enqueued in the transaction that stores them: a queue that cannot take
    // them refuses the retry as it refuses a new batch (503, Retry-After), the batch left as it was.
    const outcome = await this.retries
      .retryFailed(
        batchId,
        firstStageOf,
        apiKeyId,
        async (items) => {
          taken = await this.limiter.takeReturnable(userId, 'batchItems', items);
        },
        (items) => this.dispatcher.enqueue(items),
      )
      .catch((error: unknown) => {
        void this.limiter.giveBack(taken);
        throw error;
      });
    if (outcome.kind === 'refused') {
      void this.limiter.giveBack(taken);
      this.logger.error(`could not enqueue the retry of batch ${batchId}: ${String(outcome.error)}`);
      throw queueUnavailable();
    }
    if (outcome.kind === 'missing') throw ApiError.notFound(`batch ${batchId}`);
    if (outcome.kind === 'unfinished') {
      throw new ApiError(
        409,
        `batch ${batchId} is still ${outcome.status === 'queued' ? 'queued' : 'running'}: retry its failed items once it has finished`,
      );
    }
    if (outcome.kind === 'none') throw new ApiError(409, `batch ${batchId} has no failed items to retry`);
    if (outcome.kind === 'over-budget') {
      throw new ApiError(
        409,
        `batch ${batchId} has spent its budget: maxCostUsd is $${usd(outcome.maxCostUsd)} and $${usd(outcome.spentUsd)} is recorded, so a retry would start nothing`,
      );
    }
    await this.dispatcher.notify(batchId).catch(() => undefined);
    return { batchId, retried: outcome.count, status: 'running' };
  }

  /**
   * Whether the batch has graded items (issue 37): its CSV export then has the `expected` and
   * `verdict` columns (an ungraded batch's export is as before). Call after `results` checked ownership.
   */
  hasGradedItems(batchId: string): Promise<boolean> {
    return this.batches.hasGradedItems(batchId);
  }

  /** One line per item in submission order, read page by page so memory stays flat. */
  async *results(userId: string, batchId: string): AsyncGenerator<BatchResultLine[]> {
    await this.ownedBatch(userId, batchId);
    let after = -1;
    for (;;) {
      const page = await this.batches.itemsPage(batchId, after, RESULTS_PAGE);
      if (page.length === 0) return;
      const ids = page.map((item) => item.messageId);
      // Answers are read only for items that ended early: theirs may be in no stage row.
      const endedEarly = page
        .filter((item) => item.status === 'cancelled' || item.status === 'failed')
        .map((item) => item.messageId);
      const [rowsOf, callsOf, startedOf] = await Promise.all([
        this.deliberations.stageRowsOf(ids),
        this.deliberations.callsOf(ids, endedEarly),
        this.deliberations.startedCallsOf(endedEarly),
      ]);
      yield page.map((item) => {
        const definition = modeDefinition(item.mode);
        const rows = rowsOf.get(item.messageId) ?? [];
        const calls = callsOf.get(item.messageId) ?? [];
        const summaries = calls.map((c) => c.summary);
        const result = definition ? definition.load(rows, item.config, null) : null;
        const headline = definition && result !== null ? definition.headline(result) : null;
        const status = item.status;
        const started = startedOf.get(item.messageId) ?? [];
        const open = uncommittedStage(
          item.mode,
          status,
          rows.map((r) => r.stageType),
          summaries,
          started,
        );
        const partial = partialOf({
          mode: item.mode,
          status,
          error: item.error,
          stage: open,
          calls: calls.map((c) => c.stored),
          started: started.map((c) => ({ ...c, model: startedModelOf(item.mode, item.config, c) })),
        });
        return {
          index: item.index,
          messageId: item.messageId,
          conversationId: item.conversationId,
          mode: item.mode,
          status: item.status,
          error: item.error,
          attempt: item.attempt,
          key: item.key,
          reference: item.reference,
          ...itemTexts(item.mode, item.question, item.config),
          answer: headline?.answer ?? null,
          headline: headline?.details ?? null,
          resultUrl: `/api/deliberations/${item.messageId}`,
          degraded: degradationOf({ mode: item.mode, calls: summaries, result, partial, status }),
          partial,
          // Issue 37: a graded item's expected answer and its panel's final answer's stored grade.
          ...(item.grading
            ? {
                expected: item.grading.expected,
                grade: deliberationGrades(rows, definition?.facts)?.final?.grade ?? null,
              }
            : {}),
        };
      });
      after = page[page.length - 1].index;
    }
  }
}

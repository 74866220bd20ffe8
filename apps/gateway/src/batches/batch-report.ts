import { Inject, Injectable } from '@nestjs/common';
import {
  BatchReportBuilder,
  ComparisonSide,
  compareSides,
  type LongRow,
  type ReportAggregates,
  type ReportItem,
  type ReportStageRow,
} from '@conclave/analysis';
import {
  isUuid,
  type BatchComparison,
  type BatchReport,
  type BatchReportItems,
  type ComparedBatch,
  type ModeName,
} from '@conclave/contracts';
import {
  BatchesRepository,
  ReportsRepository,
  type Batch,
  type ReportBatchShape,
} from '@conclave/persistence';
import type { ConclaveConfig } from '@conclave/config';
import type { Metrics } from '@conclave/observability';
import { CONFIG, METRICS } from '@conclave/platform';
import { ApiError } from '../common/api-error';
import { WorkSlots } from '../common/work-slots';
import { longExportPages } from './batch-long-export';
import { ReportCache } from './report-cache';

/** Items per page: two narrow queries per page (items, then their stage rows), never one per item. */
const PAGE = 500;
const FAILURE_GROUPS = 20;
const UNMATCHED_SHOWN = 20;

interface Page {
  items: ReportItem[];
  rows: Map<string, ReportStageRow[]>;
}

const isFinished = (item: ReportItem) => item.status === 'complete' || item.status === 'failed';

/**
 * Batch reports and comparisons (issue 21), computed from stored rows only, in one streaming pass
 * per batch: pages of items with their stage rows feed the builders of @conclave/analysis, which
 * keep running sums and a few compact numeric columns, so a batch of ten thousand items is never
 * held in memory; per model usage, latency quantiles and failure groups are aggregated by PostgreSQL.
 *
 * Computations take turns in a few slots per gateway, fairly across users (WorkSlots); a finished
 * batch's report, and a comparison of two finished batches, is kept (ReportCache) under a key that
 * changes whenever the batch can have changed, and answered from there until then.
 */
@Injectable()
export class BatchReportService {
  /** A few at a time per gateway: each holds up to ~150 MB while it runs. */
  private readonly slots: WorkSlots;
  private readonly cache: ReportCache;
  /** Answers of finished batches being computed, by cache key: a second ask waits for the first. */
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly batches: BatchesRepository,
    private readonly reports: ReportsRepository,
    @Inject(CONFIG) config: ConclaveConfig,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    this.slots = new WorkSlots({
      slots: config.reports.slots,
      perOwner: config.reports.queuePerUser,
      total: config.reports.queueTotal,
      what: 'batch reports and comparisons',
      perOwnerSetting: 'REPORT_QUEUE_PER_USER',
      totalSetting: 'REPORT_QUEUE_TOTAL',
    });
    this.cache = new ReportCache(config.reports.cacheBytes);
  }

  /** Computations running and waiting on this gateway (for tests and diagnostics). */
  get busy(): { running: number; waiting: number } {
    return this.slots.busy;
  }

  private async owned(userId: string, batchId: string): Promise<Batch> {
    const batch = isUuid(batchId) ? await this.batches.owned(userId, batchId) : null;
    if (!batch) throw ApiError.notFound(`batch ${batchId}`);
    return batch;
  }

  /**
   * What identifies the state of a finished batch's data, null while it runs (its report is then
   * computed fresh). A retry of failed items clears and later sets finished_at again and adds
   * attempts; deleting an item's conversation removes its rows; a deleted batch is not found.
   */
  private async fingerprint(batch: Batch): Promise<string | null> {
    if (batch.finishedAt === null) return null;
    const rows = await this.reports.itemRows(batch.id);
    return `${batch.id}@${batch.finishedAt.toISOString()}/${batch.status}/${rows}`;
  }

  private async page(batchId: string, after: number): Promise<Page> {
    const items = await this.reports.itemsPage(batchId, after, PAGE);
    const rows = await this.reports.stageRows(items.filter(isFinished).map((i) => i.messageId));
    return { items, rows };
  }

  /** Every item in submission order with its stage rows; the next page is read while this one is used. */
  private async *items(batchId: string): AsyncGenerator<{ item: ReportItem; rows: ReportStageRow[] }> {
    let next = this.page(batchId, -1);
    for (;;) {
      const page = await next;
      if (page.items.length === 0) return;
      next =
        page.items.length < PAGE
          ? Promise.resolve({ items: [], rows: new Map() })
          : this.page(batchId, page.items[page.items.length - 1].index);
      // A rejected prefetch is awaited on the next turn; until then it must not count as unhandled.
      next.catch(() => undefined);
      for (const item of page.items) yield { item, rows: page.rows.get(item.messageId) ?? [] };
    }
  }

  private async aggregates(batchId: string): Promise<ReportAggregates> {
    const [calls, stageCalls, usage, failures] = await Promise.all([
      this.reports.modelCalls(batchId),
      this.reports.stageCalls(batchId),
      this.reports.usage(batchId),
      this.reports.failureGroups(batchId, FAILURE_GROUPS),
    ]);
    return { calls, stageCalls, usage, failures };
  }

  /**
   * The answer for `key` (null: not to be kept): from the cache, else from a computation already
   * under way for the same key, else computed in the user's turn and, when `final` says the answer
   * covers finished batches only, kept. Cached answers are stored as their JSON text and parsed
   * anew for each request, so they are byte for byte what was computed and no caller can change them.
   */
  private async answer<T>(
    userId: string,
    kind: 'report' | 'comparison',
    key: string | null,
    compute: () => Promise<T>,
    final: (answer: T) => boolean,
  ): Promise<T> {
    if (key !== null) {
      // A computation that failed (or was refused) for someone else's ask is no answer: compute.
      const cached = this.cache.get(key) ?? (await this.inFlight.get(key)?.catch(() => undefined));
      if (cached !== undefined) {
        this.metrics.batchReports.inc({ kind, outcome: 'cached' });
        return JSON.parse(cached) as T;
      }
    }
    const run = this.slots.run(userId, compute);
    if (key !== null) {
      const text = run.then((answer) => {
        const json = JSON.stringify(answer);
        if (final(answer)) this.cache.set(key, json);
        return json;
      });
      this.inFlight.set(key, text);
      text
        .catch(() => undefined)
        .finally(() => {
          if (this.inFlight.get(key) === text) this.inFlight.delete(key);
        });
    }
    try {
      const answer = await run;
      this.metrics.batchReports.inc({ kind, outcome: 'computed' });
      return answer;
    } catch (error) {
      if (error instanceof ApiError && (error.getStatus() === 429 || error.getStatus() === 503)) {
        this.metrics.batchReports.inc({ kind, outcome: 'refused' });
      }
      throw error;
    }
  }

  /**
   * The long-format export's rows (issue 36), a page of items at a time, once the batch is found to
   * be the user's (another user's batch: 404 before anything is sent).
   */
  async longExport(userId: string, batchId: string): Promise<AsyncGenerator<LongRow[]>> {
    const batch = await this.owned(userId, batchId);
    return longExportPages(this.reports, batch.id);
  }

  async report(userId: string, batchId: string): Promise<BatchReport> {
    const batch = await this.owned(userId, batchId);
    const fingerprint = await this.fingerprint(batch);
    return this.answer(
      userId,
      'report',
      fingerprint === null ? null : `report:${fingerprint}`,
      () => this.build(batch),
      (report) => !report.partial,
    );
  }

  private async build(batch: Batch): Promise<BatchReport> {
    const builder = new BatchReportBuilder({ seed: batch.id });
    for await (const { item, rows } of this.items(batch.id)) builder.addItem(item, rows);
    const aggregates = await this.aggregates(batch.id);
    return builder.result(
      { batchId: batch.id, name: batch.name, status: batch.status, generatedAt: new Date().toISOString() },
      aggregates,
    );
  }

  async compare(userId: string, a: unknown, b: unknown): Promise<BatchComparison> {
    const fields: Record<string, string> = {};
    if (typeof a !== 'string' || a === '') fields.a = 'a is required: the id of the first batch (?a=…&b=…)';
    if (typeof b !== 'string' || b === '') fields.b = 'b is required: the id of the second batch (?a=…&b=…)';
    if (Object.keys(fields).length > 0) throw ApiError.invalid(fields);
    const [batchA, batchB] = [await this.owned(userId, a as string), await this.owned(userId, b as string)];
    const [fingerprintA, fingerprintB] = [await this.fingerprint(batchA), await this.fingerprint(batchB)];
    return this.answer(
      userId,
      'comparison',
      fingerprintA === null || fingerprintB === null ? null : `compare:${fingerprintA}:${fingerprintB}`,
      () => this.compareOwned(batchA, batchB),
      (comparison) => !comparison.a.partial && !comparison.b.partial,
    );
  }

  private async compareOwned(batchA: Batch, batchB: Batch): Promise<BatchComparison> {
    const [shapeA, shapeB] = await Promise.all([
      this.reports.shape(batchA.id),
      this.reports.shape(batchB.id),
    ]);
    const mode = this.sameMode(shapeA, shapeB);
    const total = (s: ReportBatchShape) => s.modes.reduce((sum, m) => sum + m.items, 0);
    const keyed = (s: ReportBatchShape) => s.modes.every((m) => m.keyed === m.items);
    const byKey = keyed(shapeA) && keyed(shapeB);
    if (byKey) {
      for (const [field, shape] of [
        ['a', shapeA],
        ['b', shapeB],
      ] as const) {
        if (shape.duplicateKeys.length > 0) {
          const shown = shape.duplicateKeys
            .map((d) => `"${d.key}" (items ${d.indexes.join(', ')})`)
            .join('; ');
          throw ApiError.invalid({
            [field]: `batch ${field} has items with the same key, so they cannot be matched: ${shown}`,
          });
        }
      }
    } else if (total(shapeA) !== total(shapeB)) {
      throw ApiError.invalid({
        b: `the batches have different item counts (a: ${total(shapeA)}, b: ${total(shapeB)}) and not every item of both has a key to match by`,
      });
    }

    const slots = total(shapeA);
    const sideA = new ComparisonSide(mode, slots);
    const sideB = new ComparisonSide(mode, slots);
    const keySlots = new Map<string, number>();
    const onlyInA = new Set<string>();
    const onlyInB: string[] = [];
    let onlyInBCount = 0;
    let position = 0;
    for await (const { item, rows } of this.items(batchA.id)) {
      const slot = byKey ? position++ : item.index;
      if (slot >= slots) continue;
      if (byKey && item.key !== null) {
        keySlots.set(item.key, slot);
        onlyInA.add(item.key);
      }
      sideA.add(slot, item, rows);
    }
    for await (const { item, rows } of this.items(batchB.id)) {
      let slot: number | undefined = item.index;
      if (byKey) {
        slot = item.key === null ? undefined : keySlots.get(item.key);
        if (slot === undefined) {
          onlyInBCount++;
          if (onlyInB.length < UNMATCHED_SHOWN && item.key !== null) onlyInB.push(item.key);
          continue;
        }
        onlyInA.delete(item.key as string);
      }
      if (slot >= slots) continue;
      sideB.add(slot, item, rows);
    }
    if (byKey && onlyInA.size === slots) {
      throw ApiError.invalid({
        b: 'no key of batch b is a key of batch a: the batches share no items to compare',
      });
    }
    const [aggregatesA, aggregatesB] = await Promise.all([
      this.aggregates(batchA.id),
      this.aggregates(batchB.id),
    ]);
    return compareSides(
      sideA,
      sideB,
      {
        a: await this.described(batchA),
        b: await this.described(batchB),
        matchedBy: byKey ? 'key' : 'index',
        unmatched: {
          onlyInA: [...onlyInA].slice(0, UNMATCHED_SHOWN),
          onlyInB,
          onlyInACount: onlyInA.size,
          onlyInBCount,
        },
      },
      { a: aggregatesA, b: aggregatesB },
      { seed: `${batchA.id}:${batchB.id}` },
    );
  }

  private sameMode(a: ReportBatchShape, b: ReportBatchShape): ModeName {
    for (const [field, shape] of [
      ['a', a],
      ['b', b],
    ] as const) {
      if (shape.modes.length > 1) {
        throw ApiError.invalid({
          [field]: `batch ${field} mixes modes (${shape.modes.map((m) => m.mode).join(', ')}): only batches of one mode can be compared`,
        });
      }
      if (shape.modes.length === 0) throw ApiError.invalid({ [field]: `batch ${field} has no items` });
    }
    const [modeA, modeB] = [a.modes[0].mode, b.modes[0].mode];
    if (modeA !== modeB) {
      throw ApiError.invalid({
        b: `batch b is a ${modeB} batch and batch a a ${modeA} batch: only batches of the same mode can be compared`,
      });
    }
    return modeA;
  }

  private async described(batch: Batch): Promise<ComparedBatch> {
    const counts = await this.batches.itemCounts(batch.id);
    const items: BatchReportItems = {
      total: Object.values(counts).reduce((sum, n) => sum + (n ?? 0), 0),
      complete: counts.complete ?? 0,
      failed: counts.failed ?? 0,
      cancelled: counts.cancelled ?? 0,
      unfinished: (counts.queued ?? 0) + (counts.running ?? 0),
    };
    return {
      batchId: batch.id,
      name: batch.name,
      status: batch.status,
      partial: items.unfinished > 0 || batch.status === 'queued' || batch.status === 'running',
      items,
    };
  }
}

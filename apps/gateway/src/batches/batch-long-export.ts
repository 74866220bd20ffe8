import { LONG_COLUMNS, longRows, type LongRow } from '@conclave/analysis';
import type { ReportItem } from '@conclave/contracts';
import type { ReportsRepository } from '@conclave/persistence';
import { stringify } from 'csv-stringify/sync';
import { neutraliseCell } from './batch-export';

/**
 * The long-format export (issue 36, `GET /api/batches/:id/results?shape=long`): one row per item
 * attempt, model call and judgement (libs/analysis reports/long-rows.ts says which), read page by
 * page like the report (the same queries and extraction), so a batch of ten thousand items is
 * never held in memory and every figure of its report can be recomputed from the rows.
 */

/** Items per page: four queries per page (items, attempts, calls, stage rows), never one per item. */
const PAGE = 500;

const isFinished = (item: ReportItem) => item.status === 'complete' || item.status === 'failed';

/** Every long row of the batch in submission order, a page of items at a time. */
export async function* longExportPages(
  reports: Pick<ReportsRepository, 'itemsPage' | 'attemptsOf' | 'callsOf' | 'stageRows'>,
  batchId: string,
): AsyncGenerator<LongRow[]> {
  let after = -1;
  for (;;) {
    const items = await reports.itemsPage(batchId, after, PAGE);
    if (items.length === 0) return;
    const first = items[0].index;
    const last = items[items.length - 1].index;
    const attempts = await reports.attemptsOf(batchId, first, last);
    const [calls, rows] = await Promise.all([
      reports.callsOf(attempts.map((a) => a.messageId)),
      reports.stageRows(items.filter(isFinished).map((i) => i.messageId)),
    ]);
    const attemptsOf = new Map<number, typeof attempts>();
    for (const attempt of attempts) {
      const list = attemptsOf.get(attempt.index) ?? [];
      list.push(attempt);
      attemptsOf.set(attempt.index, list);
    }
    yield items.flatMap((item) =>
      longRows({
        item,
        attempts: attemptsOf.get(item.index) ?? [],
        calls,
        rows: rows.get(item.messageId) ?? [],
      }),
    );
    after = last;
  }
}

/** One CSV record: numbers stay numbers, booleans are `true` / `false`, every text cell is neutralised. */
export function longCsvRow(row: LongRow): (string | number)[] {
  return LONG_COLUMNS.map((column) => {
    const value = row[column];
    if (typeof value === 'number') return value;
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    return neutraliseCell(value ?? '');
  });
}

export const LONG_CSV_HEADER_LINE = stringify([[...LONG_COLUMNS]]);

/** Text cells quoted, numbers not (as the per-item export writes them). */
export const longCsvRecords = (rows: LongRow[]): string =>
  stringify(rows.map(longCsvRow), { quoted_string: true });

/** JSONL: one object per row with every column, values exactly as read. */
export const longJsonl = (rows: LongRow[]): string =>
  rows.length === 0 ? '' : rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

import type { BatchView } from '@conclave/contracts';

const BAR_WIDTH = 24;
/** Without a TTY, a progress line at most this often. */
const QUIET_INTERVAL_MS = 2_000;

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const done = (view: BatchView): number => view.complete + view.failed + view.cancelled;

/** The ETA while the batch runs; none once it has finished. */
const etaOf = (view: BatchView): string | null =>
  view.etaSeconds === null || view.finishedAt !== null ? null : formatDuration(view.etaSeconds);

const counts = (view: BatchView): string =>
  `${view.complete} complete · ${view.failed} failed · ${view.running} running · ` +
  `${view.queued} queued · ${view.cancelled} cancelled`;

export function progressLine(view: BatchView): string {
  const fraction = view.total > 0 ? done(view) / view.total : 1;
  const filled = Math.round(fraction * BAR_WIDTH);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}]`;
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  const eta = etaOf(view) === null ? '' : ` · ETA ${etaOf(view)}`;
  return `${bar} ${percent} ${done(view)}/${view.total} · ${counts(view)}${eta}`;
}

function elapsedSeconds(view: BatchView): number | null {
  if (!view.finishedAt) return null;
  const from = Date.parse(view.startedAt ?? view.createdAt);
  return (Date.parse(view.finishedAt) - from) / 1000;
}

export function summaryLine(view: BatchView): string {
  const elapsed = elapsedSeconds(view);
  const took = elapsed === null ? '' : ` in ${formatDuration(elapsed)}`;
  return (
    `batch ${view.batchId} ${view.status}${took}: ${view.total} items, ${view.complete} complete, ` +
    `${view.failed} failed, ${view.cancelled} cancelled`
  );
}

const usageOf = (view: BatchView): string =>
  `${view.usage.promptTokens} prompt + ${view.usage.completionTokens} completion tokens, ` +
  `$${view.usage.costUsd.toFixed(4)}`;

const budgetOf = (view: BatchView): string =>
  `$${view.maxCostUsd} (maxCostUsd)` +
  (view.status === 'budget_exhausted' ? ': reached, the items not started were cancelled' : '');

/** A batch, readably: one `label  value` line per aspect. */
export function describeBatch(view: BatchView): string {
  const rows: [string, string | null][] = [
    ['batch', view.batchId],
    ['name', view.name],
    ['status', view.status],
    ['progress', `${done(view)}/${view.total} done (${counts(view)})`],
    ['eta', etaOf(view)],
    ['concurrency', String(view.concurrency)],
    ['created', view.createdAt],
    ['started', view.startedAt],
    ['finished', view.finishedAt],
    ['usage', usageOf(view)],
    ['budget', view.maxCostUsd == null ? null : budgetOf(view)],
    ['retried', view.retriedItems ? `${view.retriedItems} item(s) run again (retry-failed)` : null],
  ];
  return rows
    .filter((row): row is [string, string] => row[1] !== null)
    .map(([label, value]) => `${label.padEnd(12)}${value}`)
    .join('\n');
}

/** One line per batch for `batch list`. */
export function batchRow(view: BatchView): string {
  const progress = `${done(view)}/${view.total}`;
  return [view.batchId, view.status.padEnd(9), progress.padStart(11), view.createdAt, view.name ?? ''].join(
    '  ',
  );
}

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/** Draws batch progress: redrawn in place on a terminal, else a line every few seconds. */
export class ProgressReporter {
  private lastLineAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly stream: ProgressStream,
    private readonly now: () => number = Date.now,
  ) {}

  update(view: BatchView): void {
    if (this.stream.isTTY) {
      this.stream.write(`\r${this.fit(progressLine(view))}\x1b[K`);
      return;
    }
    if (this.now() - this.lastLineAt < QUIET_INTERVAL_MS) return;
    this.lastLineAt = this.now();
    this.stream.write(`${progressLine(view)}\n`);
  }

  finish(view: BatchView): void {
    if (this.stream.isTTY) this.stream.write(`\r${this.fit(progressLine(view))}\x1b[K\n`);
    this.stream.write(`${summaryLine(view)}\n`);
  }

  /** Leaves the line being redrawn, e.g. before another message. */
  interrupt(): void {
    if (this.stream.isTTY) this.stream.write('\n');
  }

  /** A line wider than the terminal wraps, and `\r` would then redraw only its last part. */
  private fit(line: string): string {
    const width = this.stream.columns;
    return width && line.length >= width ? `${line.slice(0, width - 2)}…` : line;
  }
}

import { retentionCutoff } from './plan';

/** The tables a conversation's data is stored in, the conversation's own first. */
export const CONVERSATION_TABLES = [
  'conversations',
  'messages',
  'deliberation_stages',
  'model_calls',
  'deliberation_events',
] as const;
export type ConversationTable = (typeof CONVERSATION_TABLES)[number];

/** What retention deletes, by kind: the `kind` label of conclave_retention_removed_total. */
export const REMOVED_KINDS = [
  'conversations',
  'messages',
  'stage_rows',
  'model_calls',
  'events',
  'batches',
] as const;
export type RemovedKind = (typeof REMOVED_KINDS)[number];
export type RemovedCounts = Record<RemovedKind, number>;

export const noneRemoved = (): RemovedCounts => ({
  conversations: 0,
  messages: 0,
  stage_rows: 0,
  model_calls: 0,
  events: 0,
  batches: 0,
});

export function addRemoved(into: RemovedCounts, more: RemovedCounts): RemovedCounts {
  for (const kind of REMOVED_KINDS) into[kind] += more[kind];
  return into;
}

/** The SQL steps of one run (LifecycleRepository); each chunk is one short transaction. */
export interface LifecycleSteps {
  ensureEventPartitions(now: Date): Promise<string[]>;
  expiredBatches(cutoff: Date, limit: number, exclude: readonly string[]): Promise<string[]>;
  batchChunk(batchId: string, cutoff: Date, size: number): Promise<{ removed: RemovedCounts; done: boolean }>;
  conversationsChunk(cutoff: Date, size: number): Promise<RemovedCounts>;
  dropEventPartitions(cutoff: Date): Promise<string[]>;
}

export interface LifecycleRunOptions {
  now: Date;
  /** RETENTION_DAYS; null: only the partitions are looked after. */
  retentionDays: number | null;
  /** Conversations per transaction (RETENTION_CHUNK_SIZE). */
  chunkSize: number;
  /** Asked before each chunk: true stops the run there (the worker is shutting down). */
  stopping?: () => boolean;
  /** Milliseconds, for the chunks' durations (performance.now by default). */
  clock?: () => number;
}

export interface LifecycleReport {
  cutoff: Date | null;
  removed: RemovedCounts;
  partitionsCreated: string[];
  partitionsDropped: string[];
  /** Transactions that deleted (or looked for) data, and the longest of them. */
  chunks: number;
  longestChunkMs: number;
  /** False when the run stopped early (shutdown); the next run goes on from where data is left. */
  complete: boolean;
}

/** Batches asked for at once; each is then deleted chunk by chunk. */
const BATCH_PAGE = 50;

/**
 * One run of the data-lifecycle job: the event partitions ahead, then (with retention on) the
 * expired batches with their items, then the other expired conversations, each in chunks of at
 * most `chunkSize` conversations (one transaction each), then the event partitions left empty.
 * Batches go first so that their items are not looked at again as plain conversations. A batch
 * that a chunk leaves in place (it is busy, or active again) is not retried within the run.
 */
export async function runLifecycle(
  steps: LifecycleSteps,
  options: LifecycleRunOptions,
): Promise<LifecycleReport> {
  const clock = options.clock ?? (() => performance.now());
  const stopping = options.stopping ?? (() => false);
  const size = options.chunkSize;
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`chunk size must be >= 1, got ${size}`);
  const report: LifecycleReport = {
    cutoff: retentionCutoff(options.now, options.retentionDays),
    removed: noneRemoved(),
    partitionsCreated: await steps.ensureEventPartitions(options.now),
    partitionsDropped: [],
    chunks: 0,
    longestChunkMs: 0,
    complete: true,
  };
  const { cutoff } = report;
  if (cutoff === null) return report;

  const timed = async <T>(chunk: () => Promise<T>): Promise<T> => {
    const started = clock();
    try {
      return await chunk();
    } finally {
      report.chunks += 1;
      report.longestChunkMs = Math.max(report.longestChunkMs, clock() - started);
    }
  };

  const tried: string[] = [];
  for (;;) {
    const batches = await steps.expiredBatches(cutoff, BATCH_PAGE, tried);
    if (batches.length === 0) break;
    for (const batchId of batches) {
      tried.push(batchId);
      for (;;) {
        if (stopping()) return { ...report, complete: false };
        const { removed, done } = await timed(() => steps.batchChunk(batchId, cutoff, size));
        addRemoved(report.removed, removed);
        if (done) break;
      }
    }
  }
  for (;;) {
    if (stopping()) return { ...report, complete: false };
    const removed = await timed(() => steps.conversationsChunk(cutoff, size));
    addRemoved(report.removed, removed);
    if (removed.conversations < size) break;
  }
  report.partitionsDropped = await steps.dropEventPartitions(cutoff);
  return report;
}

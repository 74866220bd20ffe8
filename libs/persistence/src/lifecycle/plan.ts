/**
 * The pure parts of the data lifecycle (issue 23): the weekly partitions of `deliberation_events`,
 * the retention cutoff and which partitions it lets go. No I/O here; event-partitions.ts and
 * LifecycleRepository run the SQL.
 */

export const EVENTS_TABLE = 'deliberation_events';
/** Catches any row no weekly partition takes (so an insert never fails for want of one). */
export const DEFAULT_EVENT_PARTITION = 'deliberation_events_default';
/** Weeks created ahead of the current one, at migrate time and by every run of the job. */
export const PARTITION_WEEKS_AHEAD = 4;

const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;

/**
 * A weekly partition: the events of the messages created from Monday 00:00 UTC (`from`,
 * inclusive) to the next Monday (`to`, exclusive). Events are partitioned by their message's
 * `created_at` (column `message_created_at`), so all of a message's events share one partition.
 */
export interface EventPartitionRange {
  name: string;
  from: Date;
  to: Date;
}

/** A partition as the catalogue shows it; `from`/`to` are null for the default partition. */
export interface ExistingPartition {
  name: string;
  from: Date | null;
  to: Date | null;
}

/** Monday 00:00 UTC of the week holding `at`. */
export function weekStart(at: Date): Date {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const sinceMonday = (new Date(day).getUTCDay() + 6) % 7;
  return new Date(day - sinceMonday * DAY_MS);
}

/** `deliberation_events_w20250106`: the table name of the week starting on that Monday. */
export function partitionName(monday: Date): string {
  const iso = monday.toISOString();
  return `${EVENTS_TABLE}_w${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}`;
}

/** The weekly partition an event of a message created at `at` belongs in. */
export function weekPartition(at: Date): EventPartitionRange {
  const from = weekStart(at);
  return { name: partitionName(from), from, to: new Date(from.getTime() + WEEK_MS) };
}

/** The partitions that must exist at `now`: this week's and the `weeksAhead` after it. */
export function partitionsAhead(now: Date, weeksAhead = PARTITION_WEEKS_AHEAD): EventPartitionRange[] {
  const first = weekStart(now).getTime();
  return Array.from({ length: weeksAhead + 1 }, (_, i) => weekPartition(new Date(first + i * WEEK_MS)));
}

const overlaps = (a: { from: Date; to: Date }, b: ExistingPartition): boolean =>
  b.from !== null && b.to !== null && a.from < b.to && b.from < a.to;

/**
 * The wanted partitions no existing partition covers, even in part: a range an operator (or an
 * earlier version) partitioned differently is left alone rather than failing on an overlap.
 */
export function missingPartitions(
  existing: readonly ExistingPartition[],
  wanted: readonly EventPartitionRange[],
): EventPartitionRange[] {
  return wanted.filter((range) => !existing.some((p) => p.name === range.name || overlaps(range, p)));
}

/** Data whose last activity is before this instant is past retention; null when retention is off. */
export function retentionCutoff(now: Date, retentionDays: number | null): Date | null {
  if (retentionDays === null) return null;
  if (!Number.isInteger(retentionDays) || retentionDays < 1)
    throw new RangeError(`retention must be a whole number of days >= 1, got ${retentionDays}`);
  return new Date(now.getTime() - retentionDays * DAY_MS);
}

/**
 * Partitions wholly before the cutoff (their last instant is older than it): candidates to drop,
 * oldest first. Each is only dropped once no message of its range is left (retention deletes the
 * conversations first, so a partition goes as a whole when all its rows were past the cutoff).
 * The default partition is never dropped.
 */
export function partitionsPastCutoff(
  existing: readonly ExistingPartition[],
  cutoff: Date,
): (ExistingPartition & { from: Date; to: Date })[] {
  return existing
    .filter((p): p is ExistingPartition & { from: Date; to: Date } => p.from !== null && p.to !== null)
    .filter((p) => p.to.getTime() <= cutoff.getTime())
    .sort((a, b) => a.from.getTime() - b.from.getTime());
}

/** A timestamp as a SQL literal for partition bounds (DDL takes no parameters). */
export function boundLiteral(at: Date): string {
  if (Number.isNaN(at.getTime())) throw new RangeError('invalid partition bound');
  return `'${at.toISOString()}'`;
}

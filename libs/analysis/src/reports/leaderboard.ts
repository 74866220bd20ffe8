import type { ReportInterval } from '@conclave/contracts';

/**
 * Leaderboards (council's models by average rank, vote's and debate's by win rate): whether each
 * entry's interval overlaps the next entry's. Overlapping neighbours are not distinguishable at
 * 95 % by their intervals (non-overlap is the stricter criterion: two 95 % intervals can overlap a
 * little while a direct test of the difference would still reject). Null for the last entry or
 * when either interval is missing.
 */
export function overlapsNext(intervals: readonly (ReportInterval | null)[]): (boolean | null)[] {
  return intervals.map((interval, i) => {
    const next = intervals[i + 1];
    if (!interval || !next) return null;
    return interval.lower <= next.upper && next.lower <= interval.upper;
  });
}

/**
 * The multiple-comparison note of a leaderboard of `count` entries, each with its own interval;
 * null below two entries.
 */
export function leaderboardNote(count: number, by: string): string | null {
  if (count < 2) return null;
  return (
    `${count} models ordered by ${by}, each with its own 95 % interval, not adjusted for multiple ` +
    `comparisons: across ${count} intervals some may miss by chance. Neighbours whose intervals ` +
    'overlap are marked "not distinguishable at 95 %": their order may be chance.'
  );
}

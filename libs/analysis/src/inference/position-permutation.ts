import { SeededRandom, type Seed } from '../random';
import { chiSquareUpperTail } from '../reports/figures';

/** One item: how many answers were shown, and the 1-based position of each valid vote on it. */
export interface PositionItem {
  readonly answersShown: number;
  readonly votedPositions: readonly number[];
}

export interface PositionPermutationOptions {
  /** Random relabellings; default 2 000 (p-values resolve to 1/2 001). */
  readonly resamples?: number;
  readonly seed?: Seed;
  /** Below this many items with a vote the test is not run; default 10. */
  readonly minimumItems?: number;
}

export type PositionTestResult =
  | {
      readonly run: true;
      readonly items: number;
      readonly votes: number;
      /** Pearson's χ² of the pooled position counts against a uniform split (the statistic). */
      readonly statistic: number;
      /** Item-permutation p-value: (1 + #relabellings at least as extreme) / (1 + resamples). */
      readonly pValue: number;
      /** The naive p-value that treats every vote as independent, for comparison only. */
      readonly independentVotesPValue: number;
      readonly resamples: number;
      readonly seed: Seed;
      readonly method: typeof POSITION_TEST_METHOD;
    }
  | { readonly run: false; readonly items: number; readonly votes: number; readonly reason: string };

export const POSITION_TEST_METHOD =
  'item-level permutation test: each item’s answer positions are relabelled jointly at random (as the shuffle that showed them did), so votes on one item stay together; statistic: χ² of the pooled position counts';

export const DEFAULT_POSITION_RESAMPLES = 2000;
export const MINIMUM_POSITION_TEST_ITEMS = 10;

function chiSquareOf(counts: Float64Array | number[], total: number): number {
  const expected = total / counts.length;
  let sum = 0;
  for (let i = 0; i < counts.length; i++) sum += (counts[i] - expected) ** 2 / expected;
  return sum;
}

/**
 * Does the position an answer was shown at sway the votes? Votes on one item are not independent
 * (every voter saw the same shuffle and most pick the same answer), so a χ² over all votes
 * overstates the evidence. This test's unit is the item: under no position effect the shuffle that
 * placed the item's answers was uniform and independent of their content, so applying a fresh
 * uniform permutation of positions to all of an item's votes at once gives a draw from the null
 * distribution that keeps each item's votes together. Items of one size (answers shown) only.
 */
export function positionPermutationTest(
  items: readonly PositionItem[],
  options: PositionPermutationOptions = {},
): PositionTestResult {
  const resamples = options.resamples ?? DEFAULT_POSITION_RESAMPLES;
  const seed = options.seed ?? 'conclave';
  const minimumItems = options.minimumItems ?? MINIMUM_POSITION_TEST_ITEMS;
  if (!Number.isInteger(resamples) || resamples < 1) {
    throw new RangeError(`resamples must be a positive integer, got ${resamples}`);
  }
  const sizes = new Set(items.map((item) => item.answersShown));
  if (sizes.size > 1)
    throw new RangeError('all items of one position test must show the same number of answers');
  const k = items[0]?.answersShown ?? 0;
  // Per item: its votes as counts by position (only positions with votes matter for relabelling).
  const perItem: { positions: number[]; counts: number[] }[] = [];
  let votes = 0;
  for (const item of items) {
    const counts = new Map<number, number>();
    for (const position of item.votedPositions) {
      if (Number.isInteger(position) && position >= 1 && position <= k) {
        counts.set(position - 1, (counts.get(position - 1) ?? 0) + 1);
      }
    }
    if (counts.size === 0) continue;
    votes += [...counts.values()].reduce((a, b) => a + b, 0);
    perItem.push({ positions: [...counts.keys()], counts: [...counts.values()] });
  }
  if (k < 2) return { run: false, items: perItem.length, votes, reason: 'fewer than two answers were shown' };
  if (perItem.length < minimumItems) {
    return {
      run: false,
      items: perItem.length,
      votes,
      reason: `fewer than ${minimumItems} items with a valid vote (${perItem.length}): too few to test`,
    };
  }
  const observed = new Float64Array(k);
  for (const item of perItem) item.positions.forEach((p, i) => (observed[p] += item.counts[i]));
  const statistic = chiSquareOf(observed, votes);
  const rng = new SeededRandom(seed);
  const permutation = new Uint32Array(k);
  const permuted = new Float64Array(k);
  let atLeast = 0;
  const tolerance = 1e-9 * Math.max(1, statistic);
  for (let r = 0; r < resamples; r++) {
    permuted.fill(0);
    for (const item of perItem) {
      // Fisher–Yates: a uniform permutation of the k positions for this item.
      for (let i = 0; i < k; i++) permutation[i] = i;
      for (let i = k - 1; i > 0; i--) {
        const j = rng.nextInt(i + 1);
        const swap = permutation[i];
        permutation[i] = permutation[j];
        permutation[j] = swap;
      }
      for (let i = 0; i < item.positions.length; i++)
        permuted[permutation[item.positions[i]]] += item.counts[i];
    }
    if (chiSquareOf(permuted, votes) >= statistic - tolerance) atLeast++;
  }
  return {
    run: true,
    items: perItem.length,
    votes,
    statistic,
    pValue: (1 + atLeast) / (1 + resamples),
    independentVotesPValue: chiSquareUpperTail(statistic, k - 1),
    resamples,
    seed,
    method: POSITION_TEST_METHOD,
  };
}

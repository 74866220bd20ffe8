import {
  bootstrapItems,
  DEFAULT_CONFIDENCE,
  NO_SPREAD_NO_INTERVAL,
  type BootstrapOptions,
} from '../bootstrap';
import { wilsonInterval } from '../proportion';
import type { EstimateWithInterval, Interval } from '../result';

/** One item's contribution to a pooled share: how many of its trials were successes. */
export interface ClusterCount {
  readonly successes: number;
  readonly trials: number;
}

export type ClusteredProportion = EstimateWithInterval & {
  readonly successes: number;
  readonly trials: number;
  readonly items: number;
  /** Variance of the pooled share relative to independent trials (≈ 1 when trials are independent). */
  readonly designEffect: number | null;
};

/**
 * A share pooled over items whose trials are not independent (all votes on one item, all calls of
 * one item): Σ successes / Σ trials, with a percentile interval from resampling whole items
 * (item-cluster bootstrap), so an item whose voters agree counts as the one observation it nearly
 * is. Items without trials take no part. The design effect compares the bootstrap variance with
 * the binomial variance p(1−p)/n of independent trials.
 */
export function clusteredProportion(
  clusters: readonly ClusterCount[],
  options: BootstrapOptions = {},
): ClusteredProportion {
  const kept = clusters.filter((cluster) => cluster.trials > 0);
  for (const cluster of kept) {
    if (!(cluster.successes >= 0 && cluster.successes <= cluster.trials)) {
      throw new RangeError(`need 0 ≤ successes ≤ trials, got ${cluster.successes} of ${cluster.trials}`);
    }
  }
  const successes = new Float64Array(kept.map((cluster) => cluster.successes));
  const trials = new Float64Array(kept.map((cluster) => cluster.trials));
  const totalSuccesses = successes.reduce((a, b) => a + b, 0);
  const totalTrials = trials.reduce((a, b) => a + b, 0);
  const replicates: number[] = [];
  const estimate = bootstrapItems(
    kept.length,
    (indices) => {
      let s = 0;
      let n = 0;
      for (let i = 0; i < indices.length; i++) {
        s += successes[indices[i]];
        n += trials[indices[i]];
      }
      const share = n === 0 ? null : s / n;
      if (share !== null) replicates.push(share);
      return share;
    },
    options,
  );
  replicates.shift(); // the first evaluation is the point estimate on the original items
  let designEffect: number | null = null;
  if (estimate.value !== null && replicates.length > 1 && totalTrials > 0) {
    const p = estimate.value;
    const binomialVariance = (p * (1 - p)) / totalTrials;
    const mean = replicates.reduce((a, b) => a + b, 0) / replicates.length;
    const variance = replicates.reduce((a, b) => a + (b - mean) ** 2, 0) / (replicates.length - 1);
    designEffect = binomialVariance > 0 ? variance / binomialVariance : null;
  }
  let interval: Interval | null =
    estimate.interval === null ? null : { ...estimate.interval, method: 'item-cluster-bootstrap' as const };
  let intervalReason = estimate.intervalReason;
  if (estimate.value !== null && estimate.intervalReason === NO_SPREAD_NO_INTERVAL) {
    // Every item gave the same share (all 0, all 1, or all alike): resampling items shows no
    // spread, but the items are still a sample. Counting each item as one trial (the most an item
    // can be worth) gives Wilson's interval over the items instead of a zero-width one.
    interval = wilsonInterval(
      estimate.value * kept.length,
      kept.length,
      options.confidence ?? DEFAULT_CONFIDENCE,
    );
    intervalReason = 'every item gave the same share: Wilson interval with each item counted as one trial';
  }
  const base = { successes: totalSuccesses, trials: totalTrials, items: kept.length, designEffect };
  if (estimate.value === null) {
    return {
      value: null,
      reason: kept.length === 0 ? 'no trials' : estimate.reason,
      interval: null,
      intervalReason: null,
      ...base,
    };
  }
  return { value: estimate.value, reason: null, interval, intervalReason, ...base };
}

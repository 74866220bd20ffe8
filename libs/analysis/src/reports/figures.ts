import type {
  ReportDistribution,
  ReportFigure,
  ReportInterval,
  ReportQuantiles,
  ReportRate,
} from '@conclave/contracts';
import type { BootstrapEstimate, BootstrapOptions } from '../bootstrap';
import { clusteredProportion, type ClusterCount } from '../inference/cluster-proportion';
import type { CategoryDistribution } from '../descriptive';
import { proportion } from '../proportion';
import type { NumericSample } from '../quantile';
import type { Interval } from '../result';
import { logGamma } from '../inference/special';
import { tInterval } from '../inference/student-t';

/** The contract's interval from the library's (a plain copy: contracts are mutable JSON). */
export function reportInterval(interval: Interval | null): ReportInterval | null {
  return interval === null
    ? null
    : {
        lower: interval.lower,
        upper: interval.upper,
        confidence: interval.confidence,
        method: interval.method,
      };
}

/** A bootstrap estimate as a report figure; n is the number of items it was computed over. */
export function bootstrapFigure(estimate: BootstrapEstimate): ReportFigure {
  return {
    value: estimate.value,
    n: estimate.items,
    interval: reportInterval(estimate.interval),
    note: estimate.reason ?? estimate.intervalReason,
  };
}

/**
 * A share pooled over items whose trials are not independent (the votes on one item): Σ count /
 * Σ n with an item-cluster bootstrap interval (`clusteredProportion`).
 */
export function clusteredRate(clusters: readonly ClusterCount[], options: BootstrapOptions = {}): ReportRate {
  const estimate = clusteredProportion(clusters, options);
  return {
    value: estimate.value,
    n: estimate.trials,
    count: estimate.successes,
    interval: reportInterval(estimate.interval),
    note: estimate.value === null ? 'no cases to count' : estimate.intervalReason,
  };
}

/**
 * A share pooled over items, each item contributing a cluster of trials: when some item has more
 * than one trial they are not independent, and the interval is the item-cluster bootstrap's
 * (`clusteredRate`); when every item has at most one, the trials are independent and Wilson's
 * interval (`rate`) is the right one.
 */
export function pooledRate(clusters: readonly ClusterCount[], options: BootstrapOptions = {}): ReportRate {
  let count = 0;
  let n = 0;
  let clustered = false;
  for (const cluster of clusters) {
    count += cluster.successes;
    n += cluster.trials;
    if (cluster.trials > 1) clustered = true;
  }
  return clustered ? clusteredRate(clusters, options) : rate(count, n, options.confidence ?? 0.95);
}

/** count / n with a Wilson interval. */
export function rate(count: number, n: number, confidence = 0.95): ReportRate {
  const p = proportion(Math.min(count, n), n, confidence);
  return {
    value: p.value,
    n,
    count,
    interval: reportInterval(p.interval),
    note: p.value === null ? 'no cases to count' : null,
  };
}

/**
 * A mean with an interval from its standard error over n items: mean ± t·SE with n − 1 degrees of
 * freedom (Student), which keeps its coverage at the handful of items a rater may have scored.
 */
export function standardErrorFigure(
  value: number | null,
  standardError: number | null,
  n: number,
  confidence = 0.95,
): ReportFigure {
  if (value === null) return { value: null, n, interval: null, note: 'no data' };
  if (standardError === null) {
    return { value, n, interval: null, note: 'a single item gives no interval' };
  }
  const interval = tInterval(value, standardError, n, confidence);
  if (interval === null) return { value, n, interval: null, note: 'a single item gives no interval' };
  return { value, n, interval: reportInterval(interval), note: null };
}

/** A plain value with no interval, and why there is none. */
export const plainFigure = (value: number | null, n: number, note: string | null = null): ReportFigure => ({
  value,
  n,
  interval: null,
  note: value === null ? (note ?? 'no data') : note,
});

export function quantiles(sample: NumericSample): ReportQuantiles {
  return { n: sample.count, p50: sample.quantile(0.5), p95: sample.quantile(0.95) };
}

export function distribution<K extends string | number>(counts: CategoryDistribution<K>): ReportDistribution {
  return {
    n: counts.total,
    categories: counts.categories.map((c) => ({
      category: String(c.category),
      count: c.count,
      share: c.share,
    })),
  };
}

/**
 * Q(a, x), the regularized upper incomplete gamma function: the series for x < a + 1, Lentz's
 * continued fraction otherwise (Numerical Recipes §6.2).
 */
function upperGamma(a: number, x: number): number {
  if (x <= 0) return 1;
  const lead = Math.exp(-x + a * Math.log(x) - logGamma(a));
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 1000; n++) {
      term *= x / (a + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * 1e-15) break;
    }
    return Math.max(0, 1 - sum * lead);
  }
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 1000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return Math.min(1, lead * h);
}

/** P(χ²_df ≥ statistic): the p-value of a chi-square test. */
export function chiSquareUpperTail(statistic: number, degreesOfFreedom: number): number {
  if (!(degreesOfFreedom > 0))
    throw new RangeError(`degrees of freedom must be positive, got ${degreesOfFreedom}`);
  if (!(statistic > 0)) return 1;
  return upperGamma(degreesOfFreedom / 2, statistic / 2);
}

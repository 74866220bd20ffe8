/**
 * Shared result shapes. Every statistic that can be undefined for some data (no items, no
 * variation, a single category) says so with `value: null` and a human-readable `reason`, so a
 * report can print the reason instead of NaN or Infinity.
 */

export interface Computed {
  readonly value: number;
  readonly reason: null;
}

export interface NotComputable {
  readonly value: null;
  /** Why the statistic has no value for this data, phrased for a report reader. */
  readonly reason: string;
}

export type Estimate = Computed | NotComputable;

export type IntervalMethod =
  | 'percentile-bootstrap'
  | 'wilson-score'
  | 'asymptotic-standard-error'
  | 'student-t'
  | 'item-cluster-bootstrap'
  | 'tango-score';

export interface Interval {
  readonly lower: number;
  readonly upper: number;
  /** Nominal coverage, e.g. 0.95. */
  readonly confidence: number;
  readonly method: IntervalMethod;
}

/**
 * An estimate with its interval. `interval` is null whenever `value` is null, and may also be null
 * for a computable value whose interval is not (then `intervalReason` says why).
 */
export type EstimateWithInterval = Estimate & {
  readonly interval: Interval | null;
  readonly intervalReason: string | null;
};

export function computed(value: number): Computed {
  return { value, reason: null };
}

export function notComputable(reason: string): NotComputable {
  return { value: null, reason };
}

/** Throws on a confidence level outside (0, 1): that is a programming error, not a data condition. */
export function checkConfidence(confidence: number): void {
  if (!(confidence > 0 && confidence < 1)) {
    throw new RangeError(`confidence must be strictly between 0 and 1, got ${confidence}`);
  }
}

/** A finite number, the only kind of value the accumulators treat as present. */
export function isPresent(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

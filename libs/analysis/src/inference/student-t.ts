import { checkConfidence, type Interval } from '../result';
import { regularizedBeta } from './special';

/** P(T ≤ t) for Student's t with `df` degrees of freedom (df > 0, not necessarily whole). */
export function studentTCdf(t: number, df: number): number {
  if (!(df > 0)) throw new RangeError(`degrees of freedom must be positive, got ${df}`);
  if (Number.isNaN(t)) throw new RangeError('t is NaN');
  if (t === Infinity) return 1;
  if (t === -Infinity) return 0;
  const tail = 0.5 * regularizedBeta(df / (df + t * t), df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/** t such that P(T ≤ t) = p, by bisection on the CDF (monotone; 200 halvings reach double precision). */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`probability must be in (0, 1), got ${p}`);
  if (!(df > 0)) throw new RangeError(`degrees of freedom must be positive, got ${df}`);
  if (p === 0.5) return 0;
  let low = -1;
  let high = 1;
  while (studentTCdf(low, df) > p) low *= 2;
  while (studentTCdf(high, df) < p) high *= 2;
  for (let i = 0; i < 200 && high - low > 1e-14 * Math.max(1, Math.abs(low)); i++) {
    const mid = (low + high) / 2;
    if (studentTCdf(mid, df) < p) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

/** The two-sided critical value t_{(1+c)/2, df}, e.g. 12.706 for 95 % at df = 1. */
export function twoSidedT(confidence: number, df: number): number {
  checkConfidence(confidence);
  return studentTQuantile((1 + confidence) / 2, df);
}

/**
 * Interval for a mean from n observations with the given standard error (s / √n): mean ± t·se with
 * n − 1 degrees of freedom, which keeps its coverage for the small n a batch's per-rater figures
 * have, where z would be too narrow (at n = 2 the 95 % t multiplier is 12.7, z's 1.96). Null below
 * two observations (no variance to estimate).
 */
export function tInterval(
  mean: number,
  standardError: number,
  n: number,
  confidence = 0.95,
): Interval | null {
  checkConfidence(confidence);
  if (!(n >= 2) || !Number.isFinite(standardError) || !Number.isFinite(mean)) return null;
  const half = twoSidedT(confidence, n - 1) * standardError;
  return { lower: mean - half, upper: mean + half, confidence, method: 'student-t' };
}

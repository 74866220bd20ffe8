import { twoSidedZ } from '../normal';
import { checkConfidence, type Interval } from '../result';

/**
 * The score statistic of Tango (1998) for the paired difference δ = (onlyA − onlyB) / n at δ:
 * (onlyA − onlyB − nδ) / √(n(2q̃ + δ(1 − δ))), where q̃ is the maximum-likelihood probability of
 * the "only B" cell under δ (the positive root of 2n·q² + (−x − y + (2n − x + y)δ)·q − yδ(1 − δ)
 * = 0, x = onlyA, y = onlyB). It decreases in δ and is 0 at the estimate.
 */
export function tangoScore(onlyA: number, onlyB: number, n: number, delta: number): number {
  const a = 2 * n;
  const b = -onlyA - onlyB + (2 * n - onlyA + onlyB) * delta;
  const c = -onlyB * delta * (1 - delta);
  const q = (Math.sqrt(Math.max(0, b * b - 4 * a * c)) - b) / (2 * a);
  const variance = n * (2 * q + delta * (1 - delta));
  const difference = onlyA - onlyB - n * delta;
  if (!(variance > 0)) return difference === 0 ? 0 : difference > 0 ? Infinity : -Infinity;
  return difference / Math.sqrt(variance);
}

/** The δ in (from, to) where the decreasing `score` crosses `target`, by bisection. */
function solve(score: (delta: number) => number, target: number, from: number, to: number): number {
  let low = from;
  let high = to;
  for (let i = 0; i < 200 && high - low > 1e-12; i++) {
    const middle = (low + high) / 2;
    if (score(middle) > target) low = middle;
    else high = middle;
  }
  return (low + high) / 2;
}

/**
 * Tango's asymptotic score interval (Tango 1998, Stat Med 17:891) for the difference of two paired
 * proportions, A − B = (onlyA − onlyB) / n, from the items right by A only and by B only among n
 * items. Recommended for paired differences by Fagerland, Lydersen & Laake (2014, Stat Methods
 * Med Res 23:1); unlike the Wald interval it keeps a width when no item is discordant and stays in
 * [−1, 1]. Matches R's contingencytables::Tango_asymptotic_score_CI_paired_2x2 and PropCIs::
 * scoreci.mp. Null for no items.
 */
export function tangoPairedInterval(
  onlyA: number,
  onlyB: number,
  n: number,
  confidence = 0.95,
): Interval | null {
  checkConfidence(confidence);
  for (const [name, value] of [
    ['onlyA', onlyA],
    ['onlyB', onlyB],
    ['n', n],
  ] as const) {
    if (!Number.isInteger(value) || value < 0)
      throw new RangeError(`${name} must be a whole number, got ${value}`);
  }
  if (onlyA + onlyB > n) throw new RangeError(`onlyA + onlyB (${onlyA + onlyB}) exceeds n (${n})`);
  if (n === 0) return null;
  const z = twoSidedZ(confidence);
  const estimate = (onlyA - onlyB) / n;
  const score = (delta: number) => tangoScore(onlyA, onlyB, n, delta);
  const upper = onlyA === n || score(1) >= -z ? 1 : solve(score, -z, estimate, 1);
  const lower = onlyB === n || score(-1) <= z ? -1 : solve(score, z, -1, estimate);
  return { lower, upper, confidence, method: 'tango-score' };
}

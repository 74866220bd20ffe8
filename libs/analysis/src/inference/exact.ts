import { logGamma } from './special';

function logChoose(n: number, k: number): number {
  return logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1);
}

/** P(X = k) for X ~ Binomial(n, p). */
export function binomialProbability(k: number, n: number, p: number): number {
  if (p === 0) return k === 0 ? 1 : 0;
  if (p === 1) return k === n ? 1 : 0;
  return Math.exp(logChoose(n, k) + k * Math.log(p) + (n - k) * Math.log(1 - p));
}

/**
 * Two-sided exact binomial test of `successes` in `trials` against probability `p`: the sum of the
 * probabilities of every outcome no more likely than the one observed (the method of R's
 * `binom.test` and SciPy's `binomtest`, with their 1e-7 relative tolerance for ties).
 */
export function exactBinomialTest(successes: number, trials: number, p = 0.5): number {
  if (!Number.isInteger(trials) || trials < 0)
    throw new RangeError(`trials must be a whole number, got ${trials}`);
  if (!Number.isInteger(successes) || successes < 0 || successes > trials) {
    throw new RangeError(`successes must be a whole number in [0, ${trials}], got ${successes}`);
  }
  if (!(p >= 0 && p <= 1)) throw new RangeError(`p must be in [0, 1], got ${p}`);
  if (trials === 0) return 1;
  const observed = binomialProbability(successes, trials, p);
  const limit = observed * (1 + 1e-7);
  let total = 0;
  for (let k = 0; k <= trials; k++) {
    const probability = binomialProbability(k, trials, p);
    if (probability <= limit) total += probability;
  }
  return Math.min(1, total);
}

export interface McNemarResult {
  /** Pairs that were right (or won) in A only. */
  readonly onlyA: number;
  /** Pairs that were right (or won) in B only. */
  readonly onlyB: number;
  /** Two-sided exact p-value; 1 when no pair changed. */
  readonly pValue: number;
  readonly method: 'exact McNemar (two-sided binomial test on the discordant pairs)';
}

/**
 * McNemar's exact test for paired binary outcomes (the same items in two runs): under no change,
 * each discordant pair is equally likely to go either way, so the count that went A's way is
 * Binomial(onlyA + onlyB, ½). Concordant pairs carry no information about the difference.
 */
export function exactMcNemar(onlyA: number, onlyB: number): McNemarResult {
  return {
    onlyA,
    onlyB,
    pValue: exactBinomialTest(onlyA, onlyA + onlyB, 0.5),
    method: 'exact McNemar (two-sided binomial test on the discordant pairs)',
  };
}

/**
 * Holm's step-down adjustment (Holm 1979) of a family of p-values, controlling the family-wise
 * error rate: sort ascending, multiply the i-th smallest (0-based) by m − i, keep the running
 * maximum, cap at 1. Returned in the input's order; nulls (tests not run) stay null and do not
 * count towards m.
 */
export function holmAdjust(pValues: readonly (number | null)[]): (number | null)[] {
  const present = pValues
    .map((p, index) => ({ p, index }))
    .filter((entry): entry is { p: number; index: number } => entry.p !== null && Number.isFinite(entry.p));
  present.sort((a, b) => a.p - b.p || a.index - b.index);
  const adjusted: (number | null)[] = pValues.map(() => null);
  let running = 0;
  present.forEach(({ p, index }, rank) => {
    running = Math.max(running, Math.min(1, p * (present.length - rank)));
    adjusted[index] = running;
  });
  return adjusted;
}

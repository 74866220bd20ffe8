import type { Confidence, ConfidenceCounts, NumericStats, QualitativeStats } from '@conclave/contracts';

export const HIGH_VARIANCE_CV = 2.0;

export function countConfidence(confidences: readonly Confidence[]): ConfidenceCounts {
  return {
    low: confidences.filter((c) => c === 'LOW').length,
    medium: confidences.filter((c) => c === 'MEDIUM').length,
    high: confidences.filter((c) => c === 'HIGH').length,
  };
}

export function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 0 ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle];
}

/** Population standard deviation, as 05-delphi.md computes it. */
export function populationStdDev(values: readonly number[]): number {
  const m = mean(values);
  return Math.sqrt(values.reduce((sum, v) => sum + (v - m) ** 2, 0) / values.length);
}

export function numericStats(values: readonly number[], confidences: readonly Confidence[]): NumericStats {
  if (values.length === 0) throw new RangeError('numericStats needs at least one value');
  const m = mean(values);
  const stdDev = populationStdDev(values);
  // CV is undefined at a mean of 0: sent as null with a flag, never Infinity or NaN in JSON.
  const cv = m === 0 ? null : stdDev / Math.abs(m);
  return {
    mean: m,
    median: median(values),
    stdDev,
    min: Math.min(...values),
    max: Math.max(...values),
    cv,
    cvUndefined: cv === null,
    highVariance: cv !== null && cv > HIGH_VARIANCE_CV,
    confidenceCounts: countConfidence(confidences),
  };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * Distribution, agreement (the largest share) and mode. Ties for the mode go to the answer that
 * comes first among the offered options, then to free-text answers alphabetically.
 */
export function qualitativeStats(
  answers: readonly string[],
  confidences: readonly Confidence[],
  options: readonly string[] = [],
): QualitativeStats {
  if (answers.length === 0) throw new RangeError('qualitativeStats needs at least one answer');
  const counts = new Map<string, number>();
  for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
  const rank = (answer: string) => {
    const i = options.indexOf(answer);
    return i < 0 ? options.length : i;
  };
  const distribution = [...counts.entries()]
    .sort(([a, x], [b, y]) => y - x || rank(a) - rank(b) || a.localeCompare(b))
    .map(([answer, count]) => ({ answer, count, percentage: round1((count / answers.length) * 100) }));
  return {
    distribution,
    agreementPercentage: distribution[0].percentage,
    mode: distribution[0].answer,
    confidenceCounts: countConfidence(confidences),
  };
}

export function isNumericStats(stats: NumericStats | QualitativeStats): stats is NumericStats {
  return 'mean' in stats;
}

/** Identical answers converge at once; otherwise the configured CV or agreement threshold. */
export function hasConverged(
  stats: NumericStats | QualitativeStats,
  thresholds: { numeric: number; qualitative: number },
): boolean {
  if (isNumericStats(stats))
    return stats.stdDev === 0 || (stats.cv !== null && stats.cv < thresholds.numeric);
  return stats.agreementPercentage >= thresholds.qualitative;
}

/** Where the Delphi report's interval is defined: with the report (libs/analysis recomputes it). */
export { confidenceInterval95 } from '@conclave/contracts';

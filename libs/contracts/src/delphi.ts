import type { StageGateOptions } from './modes';
export type QuestionType = 'numeric' | 'qualitative';
export type Confidence = 'LOW' | 'MEDIUM' | 'HIGH';

export interface ConfidenceCounts {
  low: number;
  medium: number;
  high: number;
}

export interface DelphiClassification {
  type: QuestionType;
  options: string[] | null;
  reasoning: string;
}

export interface NumericStats {
  mean: number;
  median: number;
  stdDev: number;
  min: number;
  max: number;
  /** stdDev / |mean|; null when the mean is 0, where it is undefined (`cvUndefined: true`). */
  cv: number | null;
  cvUndefined: boolean;
  highVariance: boolean;
  confidenceCounts: ConfidenceCounts;
}

export interface QualitativeStats {
  distribution: { answer: string; count: number; percentage: number }[];
  agreementPercentage: number;
  mode: string;
  confidenceCounts: ConfidenceCounts;
}

export type DelphiStats = NumericStats | QualitativeStats;

export interface DelphiEstimateSummary {
  participantIndex: number;
  estimate?: number;
  answer?: string;
  confidence: Confidence;
  changed: boolean;
}

export interface DelphiNumericEstimate {
  model: string;
  estimate: number;
  confidence: Confidence;
  reasoning: string;
  previousEstimate: number | null;
  changed: boolean;
  responseTimeMs: number;
}

export interface DelphiQualitativeEstimate {
  model: string;
  answer: string;
  confidence: Confidence;
  reasoning: string;
  previousAnswer: string | null;
  changed: boolean;
  responseTimeMs: number;
}

export type DelphiEstimate = DelphiNumericEstimate | DelphiQualitativeEstimate;

export interface DelphiRound {
  roundNumber: number;
  estimates: DelphiEstimate[];
  stats: DelphiStats;
  converged: boolean;
}

export interface DelphiReport {
  facilitatorModel: string;
  report: string;
  totalRounds: number;
  converged: boolean;
  finalValue: number | string;
  responseTimeMs: number;
  /** Numeric questions: the last round's median and a 95% confidence interval of its mean. */
  median?: number;
  confidenceInterval?: { low: number; high: number; level: 0.95 };
}

/** Student's t quantiles for 95 % by degrees of freedom (a larger panel falls back to 1.96). */
const T_95: Record<number, number> = {
  1: 12.706,
  2: 4.303,
  3: 3.182,
  4: 2.776,
  5: 2.571,
  6: 2.447,
  7: 2.365,
  8: 2.306,
};

/**
 * The report's `confidenceInterval`: a 95% confidence interval of the mean, Student's t with the
 * sample standard deviation, which is what a panel of a handful of estimates calls for. Defined with
 * the report so that the mode states it and libs/analysis recomputes it from the same code.
 */
export function confidenceInterval95(values: readonly number[]): { low: number; high: number; level: 0.95 } {
  const m = values.reduce((a, b) => a + b, 0) / values.length;
  if (values.length < 2) return { low: m, high: m, level: 0.95 };
  const sampleSd = Math.sqrt(values.reduce((s, v) => s + (v - m) ** 2, 0) / (values.length - 1));
  const half = (T_95[values.length - 1] ?? 1.96) * (sampleSd / Math.sqrt(values.length));
  return { low: m - half, high: m + half, level: 0.95 };
}

/** Partial while running: stages not reached yet are absent. */
export interface DelphiResult {
  classification: DelphiClassification;
  rounds: DelphiRound[];
  converged: boolean;
  convergenceRound: number | null;
  finalValue: number | string;
  report: DelphiReport;
  title?: string;
}

export interface DelphiConfig extends StageGateOptions {
  panelistModels: string[];
  facilitatorModel: string;
  maxRounds: number;
  numericConvergenceThreshold: number;
  qualitativeConvergenceThreshold: number;
  questionType: QuestionType | null;
  options: string[] | null;
  timeoutMs: number;
  /** Asked in turn when the facilitator fails (classification and report). */
  facilitatorFallbacks?: string[];
}

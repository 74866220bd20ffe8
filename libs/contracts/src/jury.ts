import type { StageGateOptions } from './modes';
export const VERDICTS = ['APPROVE', 'REVISE', 'REJECT'] as const;
export type Verdict = (typeof VERDICTS)[number];

export const DIMENSIONS = ['accuracy', 'completeness', 'clarity', 'relevance', 'actionability'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export type DimensionScores = Record<Dimension, number | null>;
/** min and max are null for a dimension no juror scored. */
export type DimensionRanges = Record<Dimension, { min: number | null; max: number | null }>;

export interface JurorAssessment {
  model: string;
  assessmentText: string;
  scores: DimensionScores;
  average: number | null;
  verdict: Verdict | null;
  recommendations: string[];
  responseTimeMs: number;
  /** false when any score or the verdict could not be parsed. */
  parseSuccess: boolean;
}

export interface VoteTally {
  approve: number;
  revise: number;
  reject: number;
}

export interface JurorSummary {
  jurorCount: number;
  successfulJurors: number;
  majorityVerdict: Verdict;
  voteTally: VoteTally;
  dimensionAverages: DimensionScores;
  dimensionRanges: DimensionRanges;
  /** Jurors whose call failed (deviations.md 6): counted in jurorCount, not in successfulJurors. */
  failedJurors: { model: string; reason: string }[];
  /** Present when something needs saying, e.g. "no juror's scores could be parsed". */
  warnings?: string[];
}

export interface DimensionAnalysisRow {
  dimension: string;
  avgScore: number;
  minScore: number;
  maxScore: number;
  consensus: string;
}

export interface ForemanReport {
  model: string;
  reportText: string;
  finalVerdict: Verdict;
  dimensionAnalysis: DimensionAnalysisRow[];
  keyStrengths: string[];
  keyWeaknesses: string[];
  recommendations: string[];
  dissentingOpinions: string[];
  responseTimeMs: number;
}

export interface JuryPresentation {
  content: string;
  originalQuestion?: string;
}

/** Partial while running: stages not reached yet are absent. */
export interface JuryResult {
  presentation: JuryPresentation;
  jurors: JurorAssessment[];
  jurorSummary: JurorSummary;
  foreman: ForemanReport;
  majorityVerdict: Verdict;
  voteTally: VoteTally;
  dimensionAverages: DimensionScores;
  title?: string;
}

export interface JuryConfig extends StageGateOptions {
  content: string;
  originalQuestion?: string;
  jurorModels: string[];
  foremanModel: string;
  timeoutMs: number;
  /** Asked in turn when the foreman fails. */
  foremanFallbacks?: string[];
}

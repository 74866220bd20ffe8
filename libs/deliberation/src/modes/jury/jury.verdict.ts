import {
  DIMENSIONS,
  type DimensionRanges,
  type DimensionScores,
  type JurorAssessment,
  type JurorSummary,
  type Verdict,
  type VoteTally,
} from '@conclave/contracts';

export const APPROVE_THRESHOLD = 7.0;
export const REJECT_THRESHOLD = 4.0;

export function verdictFromAverage(average: number): Verdict {
  if (average >= APPROVE_THRESHOLD) return 'APPROVE';
  if (average >= REJECT_THRESHOLD) return 'REVISE';
  return 'REJECT';
}

export function tally(verdicts: readonly (Verdict | null)[]): VoteTally {
  return {
    approve: verdicts.filter((v) => v === 'APPROVE').length,
    revise: verdicts.filter((v) => v === 'REVISE').length,
    reject: verdicts.filter((v) => v === 'REJECT').length,
  };
}

/**
 * Most votes wins; ties go to the conservative side (03-jury.md §F): APPROVE–REJECT → REVISE,
 * APPROVE–REVISE → REVISE, REVISE–REJECT → REJECT, a three-way tie → REVISE. No votes → null.
 */
export function majorityOf(votes: VoteTally): Verdict | null {
  const counts: [Verdict, number][] = [
    ['APPROVE', votes.approve],
    ['REVISE', votes.revise],
    ['REJECT', votes.reject],
  ];
  const most = Math.max(...counts.map(([, n]) => n));
  if (most === 0) return null;
  const leaders = counts.filter(([, n]) => n === most).map(([v]) => v);
  if (leaders.length === 1) return leaders[0];
  if (leaders.length === 3) return 'REVISE';
  if (leaders.includes('APPROVE') && leaders.includes('REJECT')) return 'REVISE';
  if (leaders.includes('APPROVE')) return 'REVISE';
  return 'REJECT';
}

const round1 = (n: number) => Math.round(n * 10) / 10;

export function summarizeJurors(
  jurors: readonly JurorAssessment[],
  failedJurors: JurorSummary['failedJurors'],
): JurorSummary {
  const warnings: string[] = [];
  let votes = tally(jurors.map((j) => j.verdict));
  let majority = majorityOf(votes);
  if (majority === null) {
    // No verdict could be parsed: infer each juror's from its average score.
    const inferred = jurors.map((j) => (j.average === null ? null : verdictFromAverage(j.average)));
    votes = tally(inferred);
    majority = majorityOf(votes);
    warnings.push(
      majority === null
        ? 'No juror verdict or score could be parsed; the majority verdict defaults to REVISE.'
        : "No juror verdict could be parsed; verdicts were inferred from the jurors' average scores.",
    );
  }
  const dimensionAverages = {} as DimensionScores;
  const dimensionRanges = {} as DimensionRanges;
  for (const dimension of DIMENSIONS) {
    const values = jurors.map((j) => j.scores[dimension]).filter((v): v is number => v !== null);
    dimensionAverages[dimension] = values.length
      ? round1(values.reduce((a, b) => a + b, 0) / values.length)
      : null;
    dimensionRanges[dimension] = values.length
      ? { min: Math.min(...values), max: Math.max(...values) }
      : { min: null, max: null };
  }
  if (jurors.every((j) => Object.values(j.scores).every((s) => s === null))) {
    warnings.push("No juror's scores could be parsed; dimension averages are unavailable.");
  }
  return {
    jurorCount: jurors.length + failedJurors.length,
    successfulJurors: jurors.length,
    majorityVerdict: majority ?? 'REVISE',
    voteTally: votes,
    dimensionAverages,
    dimensionRanges,
    failedJurors,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

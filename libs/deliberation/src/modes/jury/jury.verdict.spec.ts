import type { JurorAssessment, Verdict } from '@conclave/contracts';
import { majorityOf, summarizeJurors, tally, verdictFromAverage } from './jury.verdict';

const juror = (
  model: string,
  verdict: Verdict | null,
  scores: (number | null)[],
  average: number | null = null,
) => {
  const [accuracy, completeness, clarity, relevance, actionability] = scores;
  return {
    model,
    assessmentText: '',
    scores: { accuracy, completeness, clarity, relevance, actionability },
    average,
    verdict,
    recommendations: [],
    responseTimeMs: 1,
    parseSuccess: verdict !== null && scores.every((s) => s !== null),
  } satisfies JurorAssessment;
};

describe('majority verdict (03-jury.md §F)', () => {
  it.each([
    [['APPROVE', 'APPROVE', 'REVISE'], 'APPROVE'],
    [['REJECT', 'REJECT', 'APPROVE'], 'REJECT'],
    [['APPROVE', 'REJECT'], 'REVISE'],
    [['APPROVE', 'REVISE'], 'REVISE'],
    [['REVISE', 'REJECT'], 'REJECT'],
    [['APPROVE', 'REVISE', 'REJECT'], 'REVISE'],
    [['APPROVE', 'APPROVE', 'REJECT', 'REJECT', 'REVISE'], 'REVISE'],
    [['APPROVE', null, 'APPROVE'], 'APPROVE'],
    [[null, null], null],
  ] as [(Verdict | null)[], Verdict | null][])('%j → %s', (verdicts, expected) => {
    expect(majorityOf(tally(verdicts))).toBe(expected);
  });

  it.each([
    [7.0, 'APPROVE'],
    [6.9, 'REVISE'],
    [4.0, 'REVISE'],
    [3.9, 'REJECT'],
  ] as [number, Verdict][])('average %d → %s', (average, verdict) => {
    expect(verdictFromAverage(average)).toBe(verdict);
  });
});

describe('summarizeJurors', () => {
  it('averages and ranges each dimension over the jurors that scored it', () => {
    const summary = summarizeJurors(
      [
        juror('a', 'APPROVE', [8, 7, 9, 8, 6], 7.6),
        juror('b', 'REVISE', [7, 5, 7, 7, 4], 6),
        juror('c', 'APPROVE', [8, 7, 9, null, 7], 7.8),
      ],
      [{ model: 'd', reason: 'timed out' }],
    );
    expect(summary).toEqual({
      jurorCount: 4,
      successfulJurors: 3,
      majorityVerdict: 'APPROVE',
      voteTally: { approve: 2, revise: 1, reject: 0 },
      dimensionAverages: {
        accuracy: 7.7,
        completeness: 6.3,
        clarity: 8.3,
        relevance: 7.5,
        actionability: 5.7,
      },
      dimensionRanges: {
        accuracy: { min: 7, max: 8 },
        completeness: { min: 5, max: 7 },
        clarity: { min: 7, max: 9 },
        relevance: { min: 7, max: 8 },
        actionability: { min: 4, max: 7 },
      },
      failedJurors: [{ model: 'd', reason: 'timed out' }],
    });
  });

  it('infers verdicts from average scores when none could be parsed', () => {
    const summary = summarizeJurors(
      [
        juror('a', null, [3, 3, 3, 3, 3], 3),
        juror('b', null, [8, 8, 8, 8, 8], 8),
        juror('c', null, [2, 2, 2, 2, 2], 2),
      ],
      [],
    );
    expect(summary.majorityVerdict).toBe('REJECT');
    expect(summary.voteTally).toEqual({ approve: 1, revise: 0, reject: 2 });
    expect(summary.warnings).toEqual([expect.stringContaining('inferred')]);
  });

  it('defaults to REVISE when neither verdicts nor scores could be parsed', () => {
    const summary = summarizeJurors(
      [juror('a', null, [null, null, null, null, null]), juror('b', null, [null, null, null, null, null])],
      [],
    );
    expect(summary.majorityVerdict).toBe('REVISE');
    expect(summary.dimensionAverages.accuracy).toBeNull();
    expect(summary.dimensionRanges.accuracy).toEqual({ min: null, max: null });
    expect(summary.warnings).toHaveLength(2);
  });
});

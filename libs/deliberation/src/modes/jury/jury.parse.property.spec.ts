import { DIMENSIONS, type JurorSummary } from '@conclave/contracts';
import fc from 'fast-check';
import { anyText, closeFences, documentOf, modeChunks, RUNS, textFor } from '../../testing/hostile-text';
import { consensusNotes, parseForemanReport } from './jury.foreman';
import { calculateAverage, parseJurorOutput, parseScores, parseVerdict } from './jury.parse';
import { summarizeJurors } from './jury.verdict';

const VERDICTS = ['APPROVE', 'REVISE', 'REJECT'] as const;
const content = fc.oneof(fc.constant(''), anyText, textFor(modeChunks.juror));
const jurorText = textFor(modeChunks.juror);
const foremanText = textFor(modeChunks.foreman);

describe('juror output: any string in, the shape of 03-jury.md out', () => {
  it('scores are null or whole numbers 1-10; the verdict one of three or null; parseSuccess exactly when all parsed', () => {
    fc.assert(
      fc.property(jurorText, content, (text, evaluated) => {
        const parsed = parseJurorOutput(text, evaluated);
        expect(Object.keys(parsed.scores).sort()).toEqual([...DIMENSIONS].sort());
        for (const score of Object.values(parsed.scores)) {
          if (score === null) continue;
          expect(Number.isInteger(score)).toBe(true);
          expect(score).toBeGreaterThanOrEqual(1);
          expect(score).toBeLessThanOrEqual(10);
        }
        expect([...VERDICTS, null]).toContain(parsed.verdict);
        expect(parsed.average).toBe(calculateAverage(parsed.scores));
        if (parsed.average !== null) {
          expect(parsed.average).toBeGreaterThanOrEqual(1);
          expect(parsed.average).toBeLessThanOrEqual(10);
        }
        expect(parsed.parseSuccess).toBe(
          Object.values(parsed.scores).every((s) => s !== null) && parsed.verdict !== null,
        );
        for (const item of parsed.recommendations) {
          expect(item.length).toBeGreaterThan(0);
          expect(item).not.toMatch(/[\r\n]/);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("takes the juror's own last verdict and scores over any it wrote or quoted before", () => {
    const score = fc.integer({ min: 1, max: 10 });
    fc.assert(
      fc.property(
        documentOf(modeChunks.juror),
        fc.constantFrom(...VERDICTS),
        fc.tuple(score, score, score, score, score),
        (before, verdict, scores) => {
          const table = DIMENSIONS.map(
            (d, i) => `| ${d.charAt(0).toUpperCase()}${d.slice(1)} | ${scores[i]} | mine |`,
          ).join('\n');
          const text = `${closeFences(before)}\n\n### Scores\n| Dimension | Score | Justification |\n|---|---|---|\n${table}\n\n### Verdict\nVERDICT: ${verdict}`;
          expect(parseVerdict(text)).toBe(verdict);
          expect(Object.values(parseScores(text))).toEqual(scores);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

const juror = (verdict: (typeof VERDICTS)[number], score: number) => ({
  model: `m/${verdict}`,
  assessmentText: '',
  scores: { accuracy: score, completeness: score, clarity: score, relevance: score, actionability: null },
  average: score,
  verdict,
  recommendations: [],
  responseTimeMs: 1,
  parseSuccess: false,
});
const summary: JurorSummary = summarizeJurors(
  [juror('APPROVE', 8), juror('REVISE', 5), juror('REVISE', 6)],
  [],
);

describe("foreman's report: any string in, a ForemanReport out", () => {
  it('has a verdict of the three, the server’s figures, and lists of non-empty one-line items', () => {
    fc.assert(
      fc.property(foremanText, content, (text, evaluated) => {
        const report = parseForemanReport({
          model: 'f',
          text,
          content: evaluated,
          summary,
          responseTimeMs: 7,
        });
        expect(VERDICTS).toContain(report.finalVerdict);
        expect(report.reportText).toBe(text);
        expect(report.dimensionAnalysis.map((r) => r.dimension)).toEqual([
          'Accuracy',
          'Completeness',
          'Clarity',
          'Relevance',
        ]);
        for (const row of report.dimensionAnalysis) {
          const key = row.dimension.toLowerCase() as keyof typeof summary.dimensionAverages;
          expect(row.avgScore).toBe(summary.dimensionAverages[key]);
          expect([row.minScore, row.maxScore]).toEqual([
            summary.dimensionRanges[key].min,
            summary.dimensionRanges[key].max,
          ]);
          expect(row.consensus.length).toBeGreaterThan(0);
        }
        const lists = [
          report.keyStrengths,
          report.keyWeaknesses,
          report.recommendations,
          report.dissentingOpinions,
        ];
        for (const item of lists.flat()) {
          expect(item.length).toBeGreaterThan(0);
          expect(item).not.toMatch(/[\r\n]/);
        }
        const notes = consensusNotes(text);
        for (const [dimension, note] of Object.entries(notes)) {
          expect(['Accuracy', 'Completeness', 'Clarity', 'Relevance', 'Actionability']).toContain(dimension);
          expect(note.length).toBeGreaterThan(0);
          expect(note).not.toMatch(/[|\n]/);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("takes the foreman's own last Final Verdict over any it quoted before", () => {
    fc.assert(
      fc.property(documentOf(modeChunks.foreman), fc.constantFrom(...VERDICTS), (before, verdict) => {
        const text = `${closeFences(before)}\n\n### Final Verdict: ${verdict}\nThe jury decided.`;
        const report = parseForemanReport({ model: 'f', text, content: '', summary, responseTimeMs: 1 });
        expect(report.finalVerdict).toBe(verdict);
      }),
      { numRuns: RUNS },
    );
  });
});

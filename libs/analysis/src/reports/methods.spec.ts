import type { BatchReport } from '@conclave/contracts';
import { countIntervals, multipleComparisonNote, reportMethods } from './methods';

const interval = (method: string) => ({ lower: 0, upper: 1, confidence: 0.95, method });
const figure = (method: string) => ({ value: 0.5, n: 10, interval: interval(method), note: null });

/** Only the parts of a report the walk reads; the rest does not matter to it. */
const report = {
  vote: {
    models: [
      { model: 'a', winRate: figure('wilson-score'), voteShare: figure('item-cluster-bootstrap') },
      { model: 'b', winRate: figure('wilson-score'), voteShare: figure('item-cluster-bootstrap') },
    ],
    positionBias: {
      groups: [
        {
          positions: [{ votes: figure('wilson-score') }],
          test: {
            run: true,
            method: 'item-level permutation test',
            unit: 'item',
            resamples: 1000,
            holmAdjustedPValue: 0.08,
          },
        },
        { positions: [], test: { run: false, reason: 'too few items' } },
      ],
    },
  },
  jury: {
    jurors: [{ leniency: figure('student-t') }],
    fleissKappa: { value: 0.4, interval: interval('percentile-bootstrap') },
  },
  models: [{ model: 'a', failedCalls: figure('wilson-score'), parseFailures: figure('wilson-score') }],
} as unknown as Omit<BatchReport, 'method'>;

describe('how the numbers were computed', () => {
  const methods = reportMethods(report, { resamples: 1000, seed: 'batch' });

  it('lists each method once per unit, with what it gives, and resamples and seed where it resamples', () => {
    expect(methods.map((m) => [m.name, m.unit, m.usedFor, m.resamples, m.seed])).toEqual([
      ['Wilson score interval', 'item', ['win rate'], null, null],
      ['item-cluster bootstrap', 'item', ['vote share'], 1000, 'batch'],
      ['item-level permutation test', 'item', ['position bias'], 1000, 'batch'],
      ['Holm step-down adjustment', 'item', ['position bias across groups of items'], null, null],
      ['Wilson score interval', 'vote', ['votes by position'], null, null],
      ['Student t interval', 'item', ['juror leniency'], null, null],
      ['percentile bootstrap over items', 'item', ['Fleiss’ κ'], 1000, 'batch'],
      ['Wilson score interval', 'call', ['failed calls'], null, null],
      ['Wilson score interval', 'answer', ['parse failures'], null, null],
    ]);
    expect(methods.every((m) => m.description.length > 0)).toBe(true);
  });

  it('notes that many intervals are not adjusted for multiple comparisons', () => {
    expect(countIntervals(report)).toBe(9);
    expect(multipleComparisonNote(9)).toBeNull();
    expect(multipleComparisonNote(12)).toMatch(
      /^This lists 12 intervals, .* not adjusted for multiple comparisons/,
    );
  });
});

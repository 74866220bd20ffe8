import fc from 'fast-check';
import { LeniencyAccumulator, type DimensionRating } from './leniency';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

describe('LeniencyAccumulator', () => {
  it('finds a juror who scores one point above the panel, one at it, one below', () => {
    const accumulator = new LeniencyAccumulator();
    for (const base of [3, 5, 7, 6]) {
      accumulator.addItem([
        { rater: 'generous', dimension: 'accuracy', score: base + 1 },
        { rater: 'fair', dimension: 'accuracy', score: base },
        { rater: 'strict', dimension: 'accuracy', score: base - 1 },
        { rater: 'generous', dimension: 'clarity', score: null },
      ]);
    }
    const [accuracy, clarity] = accumulator.result();
    expect(accuracy.dimension).toBe('accuracy');
    expect(accuracy.scores).toMatchObject({ count: 12, mean: 5.25 });
    expect(accuracy.raters.map((r) => [r.rater, r.leniency])).toEqual([
      ['generous', 1],
      ['fair', 0],
      ['strict', -1],
    ]);
    expect(accuracy.raters[0]).toMatchObject({
      items: 4,
      raterMean: 6.25,
      panelMean: 5.25,
      standardError: 0,
    });
    expect(clarity).toMatchObject({ dimension: 'clarity', raters: [], itemsWithoutPanel: 0 });
    expect(clarity.scores).toMatchObject({ count: 0, missing: 4, mean: null });
  });

  it('compares a rater with the panel on the items it scored, not on all items', () => {
    const accumulator = new LeniencyAccumulator();
    accumulator.addItem([
      { rater: 'a', dimension: 'd', score: 9 },
      { rater: 'b', dimension: 'd', score: 9 },
    ]);
    accumulator.addItem([
      { rater: 'a', dimension: 'd', score: 2 },
      { rater: 'c', dimension: 'd', score: 2 },
    ]);
    accumulator.addItem([{ rater: 'a', dimension: 'd', score: 5 }]);
    const [d] = accumulator.result();
    // b only saw the easy item and scored it like the panel: not lenient despite a mean of 9.
    expect(d.raters.every((r) => r.leniency === 0)).toBe(true);
    expect(d.raters.find((r) => r.rater === 'b')).toMatchObject({
      raterMean: 9,
      panelMean: 9,
      items: 1,
      standardError: null,
    });
    expect(d.itemsWithoutPanel).toBe(1);
  });

  it('with complete data, leniencies sum to zero and equal rater mean minus panel mean', () => {
    const raters = ['j1', 'j2', 'j3'];
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 1, max: 10 }),
            fc.integer({ min: 1, max: 10 }),
            fc.integer({ min: 1, max: 10 }),
          ),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        (items) => {
          const accumulator = new LeniencyAccumulator();
          for (const scores of items) {
            accumulator.addItem(
              scores.map((score, r): DimensionRating => ({ rater: raters[r], dimension: 'x', score })),
            );
          }
          const [x] = accumulator.result();
          expect(x.raters).toHaveLength(3);
          expect(x.raters.reduce((sum, r) => sum + r.leniency, 0)).toBeCloseTo(0, 9);
          for (const r of x.raters) {
            expect(r.leniency).toBeCloseTo(r.raterMean - r.panelMean, 9);
            expect(r.panelMean).toBeCloseTo(x.scores.mean ?? Number.NaN, 9);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});

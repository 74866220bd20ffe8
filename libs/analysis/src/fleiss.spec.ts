import fc from 'fast-check';
import { FleissKappaAccumulator } from './fleiss';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

function fromCountRows(rows: readonly (readonly number[])[]): FleissKappaAccumulator {
  const accumulator = new FleissKappaAccumulator(['1', '2', '3', '4', '5']);
  for (const row of rows)
    accumulator.addCounts(Object.fromEntries(row.map((count, j) => [String(j + 1), count])));
  return accumulator;
}

describe("Fleiss' κ: known answers", () => {
  it('the Wikipedia worked example (10 subjects, 14 raters, 5 categories): κ = 0.210', () => {
    const result = fromCountRows([
      [0, 0, 0, 0, 14],
      [0, 2, 6, 4, 2],
      [0, 0, 3, 5, 6],
      [0, 3, 9, 2, 0],
      [2, 2, 8, 1, 1],
      [7, 7, 0, 0, 0],
      [3, 2, 6, 3, 0],
      [2, 5, 3, 2, 2],
      [6, 5, 2, 1, 0],
      [0, 2, 2, 3, 7],
    ]).result();
    expect(result.value).toBeCloseTo(0.21, 3);
    expect(result.observedAgreement).toBeCloseTo(0.378, 3);
    expect(result.expectedAgreement).toBeCloseTo(0.213, 3);
    expect(result.categories.map((c) => Number(c.share.toFixed(3)))).toEqual([
      0.143, 0.2, 0.279, 0.15, 0.229,
    ]);
    expect(result).toMatchObject({
      items: 10,
      ratedItems: 10,
      fixedRaters: true,
      ratersPerItem: { min: 14, max: 14 },
    });
  });

  it("Fleiss's 1971 psychiatric diagnoses (30 patients, 6 raters): κ = 0.4302445 as R irr::kappam.fleiss", () => {
    const diagnoses = [
      [4, 4, 4, 4, 4, 4],
      [2, 2, 2, 5, 5, 5],
      [2, 3, 3, 3, 3, 5],
      [5, 5, 5, 5, 5, 5],
      [2, 2, 2, 4, 4, 4],
      [1, 1, 3, 3, 3, 3],
      [3, 3, 3, 3, 5, 5],
      [1, 1, 3, 3, 3, 4],
      [1, 1, 4, 4, 4, 4],
      [5, 5, 5, 5, 5, 5],
      [1, 4, 4, 4, 4, 4],
      [1, 2, 4, 4, 4, 4],
      [2, 2, 2, 3, 3, 3],
      [1, 4, 4, 4, 4, 4],
      [2, 2, 4, 4, 4, 5],
      [3, 3, 3, 3, 3, 5],
      [1, 1, 1, 4, 5, 5],
      [1, 1, 1, 1, 1, 2],
      [2, 2, 4, 4, 4, 4],
      [1, 3, 3, 5, 5, 5],
      [5, 5, 5, 5, 5, 5],
      [2, 4, 4, 4, 4, 4],
      [2, 2, 4, 5, 5, 5],
      [1, 1, 4, 4, 4, 4],
      [1, 4, 4, 4, 4, 5],
      [2, 2, 2, 2, 2, 4],
      [1, 1, 1, 1, 5, 5],
      [2, 2, 4, 4, 4, 4],
      [1, 3, 3, 3, 3, 3],
      [5, 5, 5, 5, 5, 5],
    ];
    const accumulator = new FleissKappaAccumulator();
    for (const ratings of diagnoses) accumulator.addRatings(ratings.map(String));
    expect(accumulator.result().value).toBeCloseTo(0.4302445, 7);
  });

  it("with differing numbers of raters, Gwet's generalisation (value from the irrCAC formula in NumPy)", () => {
    const accumulator = new FleissKappaAccumulator();
    for (const item of [
      ['a', 'a', 'b'],
      ['a', 'a'],
      ['b', 'b', 'b', 'c'],
      ['c'],
      ['a', 'b', 'c', 'c'],
      ['b', 'b'],
    ]) {
      accumulator.addRatings(item);
    }
    accumulator.addRatings([null, undefined]);
    const result = accumulator.result();
    expect(result.value).toBeCloseTo(0.39545189504373174, 12);
    expect(result).toMatchObject({
      items: 7,
      ratedItems: 5,
      fixedRaters: false,
      ratersPerItem: { min: 1, max: 4 },
    });
    expect(result.observedAgreement).toBeCloseTo(0.6, 12);
  });
});

describe("Fleiss' κ: undefined cases and properties", () => {
  it('answers null with a reason: no items, single ratings only, one category throughout', () => {
    expect(new FleissKappaAccumulator().result()).toMatchObject({ value: null, reason: 'no items' });
    const single = new FleissKappaAccumulator();
    single.addRatings(['APPROVE']);
    expect(single.result()).toMatchObject({ value: null, reason: expect.stringMatching(/two or more/) });
    const same = new FleissKappaAccumulator(['APPROVE', 'REJECT']);
    same.addRatings(['APPROVE', 'APPROVE', 'APPROVE']);
    same.addRatings(['APPROVE', 'APPROVE']);
    expect(same.result()).toMatchObject({
      value: null,
      reason: expect.stringMatching(/same category/),
      observedAgreement: 1,
      expectedAgreement: 1,
    });
  });

  const item = fc.array(fc.constantFrom('APPROVE', 'REVISE', 'REJECT'), { minLength: 3, maxLength: 3 });

  it('is finite and at most 1, 1 for unanimous items over two or more categories, and order-free', () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 25 }), (items) => {
        const forward = new FleissKappaAccumulator();
        const backward = new FleissKappaAccumulator();
        items.forEach((ratings) => forward.addRatings(ratings));
        [...items].reverse().forEach((ratings) => backward.addRatings([...ratings].reverse()));
        const a = forward.result();
        const b = backward.result();
        if (a.value === null) {
          expect(b.value).toBeNull();
          return;
        }
        expect(Number.isFinite(a.value)).toBe(true);
        expect(a.value).toBeLessThanOrEqual(1 + 1e-12);
        expect(b.value).toBeCloseTo(a.value, 12);
        const unanimous = items.every((r) => r.every((v) => v === r[0]));
        if (unanimous) expect(a.value).toBeCloseTo(1, 12);
      }),
      { numRuns: RUNS },
    );
  });
});

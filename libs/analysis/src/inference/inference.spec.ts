import { SeededRandom } from '../random';
import { chiSquareUpperTail } from '../reports/figures';
import { clusteredProportion } from './cluster-proportion';
import { exactBinomialTest, exactMcNemar, holmAdjust } from './exact';
import { positionPermutationTest, type PositionItem } from './position-permutation';
import { regularizedBeta } from './special';
import { studentTCdf, studentTQuantile, tInterval } from './student-t';

// Reference values from SciPy 1.17.1 (scipy.stats.t, scipy.special.betainc, scipy.stats.binomtest).
describe('special functions and Student t against SciPy 1.17.1', () => {
  it.each([
    [2, 3, 0.4, 0.5248],
    [0.5, 0.5, 0.9, 0.7951672353008665],
    [10, 20, 0.3, 0.3640040810719437],
  ])('I_x(a=%p, b=%p) at x=%p', (a, b, x, expected) => {
    expect(regularizedBeta(x, a, b)).toBeCloseTo(expected, 12);
  });

  it.each([
    [1.5, 1, 0.8128329581890011],
    [-2.0, 3, 0.06966298427942152],
    [0.3, 10, 0.6148396962171008],
    [2.5, 30.5, 0.9909918770681041],
  ])('t CDF at %p with df %p', (t, df, expected) => {
    expect(studentTCdf(t, df)).toBeCloseTo(expected, 12);
  });

  it.each([
    [0.975, 1, 12.706204736174694],
    [0.975, 2, 4.302652729749462],
    [0.975, 5, 2.5705818356363146],
    [0.995, 29, 2.756385903670605],
    [0.05, 4, -2.131846786326651],
  ])('t quantile %p with df %p', (p, df, expected) => {
    expect(studentTQuantile(p, df)).toBeCloseTo(expected, 9);
  });

  it('a t interval at n = 2 is as wide as t says, not z', () => {
    // The leniency example: mean −0.30, se 0.06 at n = 2 gave [−0.42, −0.18] with z.
    const interval = tInterval(-0.3, 0.06, 2);
    expect(interval?.lower).toBeCloseTo(-0.3 - 12.706204736174694 * 0.06, 9);
    expect(interval?.upper).toBeCloseTo(-0.3 + 12.706204736174694 * 0.06, 9);
    expect(interval?.method).toBe('student-t');
    expect(tInterval(1, 0, 1)).toBeNull();
  });
});

describe('exact tests', () => {
  it.each([
    [3, 3, 0.5, 0.25],
    [7, 20, 0.5, 0.26317596435546875],
    [2, 10, 0.3, 0.7331720679999996],
    [0, 5, 0.5, 0.0625],
    [15, 16, 0.5, 0.000518798828125],
  ])('binomial test %p of %p at p = %p matches SciPy binomtest', (k, n, p, expected) => {
    expect(exactBinomialTest(k, n, p)).toBeCloseTo(expected, 12);
  });

  it('McNemar uses only the discordant pairs', () => {
    expect(exactMcNemar(15, 1).pValue).toBeCloseTo(0.000518798828125, 12);
    expect(exactMcNemar(0, 0).pValue).toBe(1);
    expect(exactMcNemar(3, 3).pValue).toBe(1);
  });

  it('Holm adjusts in step-down order, keeps the input order and skips tests not run', () => {
    // R: p.adjust(c(0.01, 0.04, 0.03, 0.2), "holm") = 0.04 0.09 0.09 0.20
    const adjusted = holmAdjust([0.01, 0.04, null, 0.03, 0.2]);
    expect(adjusted[0]).toBeCloseTo(0.04, 12);
    expect(adjusted[1]).toBeCloseTo(0.09, 12);
    expect(adjusted[2]).toBeNull();
    expect(adjusted[3]).toBeCloseTo(0.09, 12);
    expect(adjusted[4]).toBeCloseTo(0.2, 12);
  });
});

/**
 * A batch with no position effect by construction: each item has one clearly better answer shown
 * at a uniformly random position, and every voter picks it with probability `agreement`, else
 * another answer at random. Votes on one item are strongly correlated, as in real batches.
 */
function nullBatch(
  rng: SeededRandom,
  items: number,
  voters: number,
  k: number,
  agreement: number,
): PositionItem[] {
  const batch: PositionItem[] = [];
  for (let i = 0; i < items; i++) {
    const best = 1 + rng.nextInt(k);
    const votedPositions: number[] = [];
    for (let v = 0; v < voters; v++) {
      if (rng.next() < agreement) votedPositions.push(best);
      else {
        const other = 1 + rng.nextInt(k - 1);
        votedPositions.push(other >= best ? other + 1 : other);
      }
    }
    batch.push({ answersShown: k, votedPositions });
  }
  return batch;
}

describe('position-bias test whose unit is the item', () => {
  it('holds its 5 % false-positive rate on clustered votes where χ² over votes does not', () => {
    const rng = new SeededRandom('position-null');
    const batches = 600;
    let permutationRejections = 0;
    let naiveRejections = 0;
    for (let b = 0; b < batches; b++) {
      const items = nullBatch(rng, 40, 4, 3, 0.88);
      const result = positionPermutationTest(items, { resamples: 199, seed: b });
      if (!result.run) throw new Error('the test should run');
      if (result.pValue <= 0.05) permutationRejections++;
      if (result.independentVotesPValue <= 0.05) naiveRejections++;
    }
    const rate = permutationRejections / batches;
    expect(rate).toBeGreaterThanOrEqual(0.03);
    expect(rate).toBeLessThanOrEqual(0.07);
    // The old test (χ² treating votes as independent) flags bias far more often than 5 %.
    expect(naiveRejections / batches).toBeGreaterThan(0.15);
  });

  it('finds a real position preference', () => {
    const rng = new SeededRandom('position-biased');
    const items: PositionItem[] = [];
    for (let i = 0; i < 200; i++) {
      // one voter always picks position 1; three others pick the best answer
      const best = 1 + rng.nextInt(3);
      items.push({ answersShown: 3, votedPositions: [1, best, best, best] });
    }
    const result = positionPermutationTest(items, { resamples: 999 });
    expect(result.run && result.pValue).toBeLessThan(0.01);
  });

  it('its statistic is Pearson’s χ² of the pooled counts against an even split', () => {
    const items: PositionItem[] = Array.from({ length: 12 }, (_, i) => ({
      answersShown: 3,
      votedPositions: i < 6 ? [1, 1] : [i % 3 === 0 ? 2 : 3],
    }));
    const result = positionPermutationTest(items, { resamples: 99 });
    // counts: position 1: 12, position 2: 2, position 3: 4; E = 6
    expect(result.run && result.statistic).toBeCloseTo(((12 - 6) ** 2 + (2 - 6) ** 2 + (4 - 6) ** 2) / 6, 12);
    expect(result.run && result.independentVotesPValue).toBeCloseTo(chiSquareUpperTail(56 / 6, 2), 12);
  });

  it('a single item is not tested, and the reason says why', () => {
    const result = positionPermutationTest([{ answersShown: 3, votedPositions: [1, 1, 1] }]);
    expect(result).toEqual({
      run: false,
      items: 1,
      votes: 3,
      reason: 'fewer than 10 items with a valid vote (1): too few to test',
    });
    // the old χ² over these three votes says p ≈ 0.0498
    expect(chiSquareUpperTail(6, 2)).toBeCloseTo(0.0498, 4);
  });

  it('is reproducible for a seed and rejects mixed item sizes', () => {
    const items = nullBatch(new SeededRandom(1), 30, 3, 4, 0.7);
    expect(positionPermutationTest(items, { seed: 5 })).toEqual(positionPermutationTest(items, { seed: 5 }));
    expect(() => positionPermutationTest([...items, { answersShown: 2, votedPositions: [1] }])).toThrow(
      /same number of answers/,
    );
  });
});

describe('item-cluster bootstrap for pooled shares', () => {
  it('covers the true share about 95 % of the time on clustered data', () => {
    const rng = new SeededRandom('cluster-coverage');
    const truth = 0.3;
    const datasets = 500;
    let covered = 0;
    for (let d = 0; d < datasets; d++) {
      const clusters = [];
      for (let i = 0; i < 100; i++) {
        // strongly clustered: an item is either "easy" (p = 0.9) or "hard" (p = 0.05), mean 0.3
        const p = rng.next() < (truth - 0.05) / 0.85 ? 0.9 : 0.05;
        let successes = 0;
        for (let t = 0; t < 4; t++) if (rng.next() < p) successes++;
        clusters.push({ successes, trials: 4 });
      }
      const estimate = clusteredProportion(clusters, { resamples: 300, seed: d });
      if (estimate.interval && estimate.interval.lower <= truth && truth <= estimate.interval.upper)
        covered++;
    }
    expect(Math.abs(covered / datasets - 0.95)).toBeLessThanOrEqual(0.03);
  });

  it('is wider than Wilson on clustered data and reports a design effect above 1', () => {
    const clusters = Array.from({ length: 100 }, (_, i) => ({ successes: i % 2 === 0 ? 4 : 0, trials: 4 }));
    const estimate = clusteredProportion(clusters);
    expect(estimate.value).toBe(0.5);
    expect(estimate.interval?.method).toBe('item-cluster-bootstrap');
    expect(estimate.designEffect).toBeGreaterThan(3);
  });

  it('no spread among items (every item 0 of its trials) gives Wilson over the items, never [0, 0]', () => {
    const estimate = clusteredProportion(Array.from({ length: 20 }, () => ({ successes: 0, trials: 3 })));
    expect(estimate.value).toBe(0);
    expect(estimate.interval?.method).toBe('wilson-score');
    // Wilson for 0 of 20 (the items, each counted once): upper ≈ 0.161
    expect(estimate.interval?.upper).toBeCloseTo(0.16113, 4);
    expect(estimate.intervalReason).toMatch(/every item gave the same share/);
  });

  it('no trials is undefined, with the reason', () => {
    expect(clusteredProportion([{ successes: 0, trials: 0 }])).toMatchObject({
      value: null,
      reason: 'no trials',
      interval: null,
    });
  });
});

import fc from 'fast-check';
import { CategoryCounts, RunningStats, TopK } from './descriptive';
import { NumericSample, quantileOfSorted } from './quantile';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

function feed(values: readonly (number | null)[]): RunningStats {
  const stats = new RunningStats();
  for (const v of values) stats.add(v);
  return stats;
}

describe('RunningStats (Welford)', () => {
  it('reproduces the textbook example: 2 4 4 4 5 5 7 9 → mean 5, population SD 2', () => {
    const r = feed([2, 4, 4, 4, 5, 5, 7, 9]).result();
    expect(r.mean).toBe(5);
    expect(r.variance).toBeCloseTo(32 / 7, 14);
    expect(r.min).toBe(2);
    expect(r.max).toBe(9);
  });

  it('keeps its precision far from zero (Welford vs naive: 1e9 + 4, 7, 13, 16 → variance 30)', () => {
    const r = feed([1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16]).result();
    expect(r.mean).toBe(1e9 + 10);
    expect(r.variance).toBeCloseTo(30, 9);
  });

  it('reports no data as nulls and a single value without a variance', () => {
    const empty = feed([null, Number.NaN]).result();
    expect(empty).toEqual({
      count: 0,
      missing: 2,
      mean: null,
      variance: null,
      standardDeviation: null,
      standardError: null,
      min: null,
      max: null,
    });
    const one = feed([3]).result();
    expect(one.mean).toBe(3);
    expect(one.variance).toBeNull();
  });

  it('agrees with a two-pass computation, and merge equals feeding everything', () => {
    const value = fc.double({ min: -1e6, max: 1e6, noNaN: true });
    fc.assert(
      fc.property(fc.array(value, { maxLength: 60 }), fc.array(value, { maxLength: 60 }), (xs, ys) => {
        const all = [...xs, ...ys];
        const merged = feed(xs);
        merged.merge(feed(ys));
        const direct = feed(all).result();
        const m = merged.result();
        expect(m.count).toBe(all.length);
        if (all.length === 0) return;
        const mean = all.reduce((a, b) => a + b, 0) / all.length;
        const scale = Math.max(1, ...all.map(Math.abs));
        expect(Math.abs((direct.mean ?? 0) - mean)).toBeLessThanOrEqual(1e-9 * scale);
        expect(Math.abs((m.mean ?? 0) - mean)).toBeLessThanOrEqual(1e-9 * scale);
        if (all.length < 2) return;
        const variance = all.reduce((a, b) => a + (b - mean) ** 2, 0) / (all.length - 1);
        expect(Math.abs((direct.variance ?? 0) - variance)).toBeLessThanOrEqual(1e-7 * scale * scale);
        expect(Math.abs((m.variance ?? 0) - variance)).toBeLessThanOrEqual(1e-7 * scale * scale);
        expect(m.min).toBe(Math.min(...all));
        expect(m.max).toBe(Math.max(...all));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('quantiles (type 7)', () => {
  const data = [3.1, -2, 7, 0.5, 9.25, 4, 4, 1e3, -17, 2.5, 6];
  // numpy.percentile(data, 100·p) with its default (linear) method.
  it.each([
    [0, -17],
    [0.1, -2],
    [0.25, 1.5],
    [0.5, 4],
    [0.9, 9.25],
    [0.95, 504.625],
    [1, 1000],
  ])('p = %p → %p, as NumPy', (p, expected) => {
    const sample = new NumericSample(2);
    for (const v of data) sample.add(v);
    expect(sample.quantile(p)).toBeCloseTo(expected, 10);
  });

  it('counts missing values apart and answers null with no data', () => {
    const sample = new NumericSample();
    sample.add(null);
    sample.add(Number.POSITIVE_INFINITY);
    expect(sample.summary()).toEqual({ count: 0, missing: 2, p50: null, p95: null });
    sample.add(42);
    expect(sample.summary()).toEqual({ count: 1, missing: 2, p50: 42, p95: 42 });
  });

  it('lies between the order statistics around it and is monotone in p', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 50 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (xs, p, q) => {
          const sorted = Float64Array.from(xs).sort();
          const a = quantileOfSorted(sorted, Math.min(p, q)) ?? Number.NaN;
          const b = quantileOfSorted(sorted, Math.max(p, q)) ?? Number.NaN;
          expect(a).toBeGreaterThanOrEqual(sorted[0]);
          expect(b).toBeLessThanOrEqual(sorted[sorted.length - 1]);
          expect(a).toBeLessThanOrEqual(b + 1e-9);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('CategoryCounts', () => {
  it('lists declared categories first, even when empty, with shares', () => {
    const counts = new CategoryCounts<string>(['APPROVE', 'REVISE', 'REJECT']);
    for (const v of ['REJECT', 'APPROVE', 'REJECT', null, 'OTHER']) counts.add(v);
    expect(counts.result()).toEqual({
      total: 4,
      missing: 1,
      categories: [
        { category: 'APPROVE', count: 1, share: 0.25 },
        { category: 'REVISE', count: 0, share: 0 },
        { category: 'REJECT', count: 2, share: 0.5 },
        { category: 'OTHER', count: 1, share: 0.25 },
      ],
    });
  });

  it('gives null shares, not NaN, when nothing was counted', () => {
    expect(new CategoryCounts([1, 2]).result().categories).toEqual([
      { category: 1, count: 0, share: null },
      { category: 2, count: 0, share: null },
    ]);
  });
});

describe('TopK', () => {
  it('keeps the k highest scores, earlier first on ties, like a stable sort', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 }), { maxLength: 40 }), fc.nat(6), (scores, k) => {
        const top = new TopK<number>(k);
        scores.forEach((score, i) => top.add(score, i));
        const expected = scores
          .map((score, item) => ({ score, item }))
          .sort((a, b) => b.score - a.score || a.item - b.item)
          .slice(0, k);
        expect(top.result()).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });
});

import fc from 'fast-check';
import { bootstrapItems, bootstrapMean, pairedBootstrap } from './bootstrap';
import { RunningStats } from './descriptive';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 50;

// Efron & Tibshirani, An Introduction to the Bootstrap (1993), Table 3.1: the 15 law schools.
const LSAT = [576, 635, 558, 578, 666, 580, 555, 661, 651, 605, 653, 575, 545, 572, 594];
const GPA = [3.39, 3.3, 2.81, 3.03, 3.44, 3.07, 3.0, 3.43, 3.36, 3.13, 3.12, 2.74, 2.76, 2.88, 2.96];

function correlation(indices: Uint32Array): number | null {
  let sx = 0;
  let sy = 0;
  for (const i of indices) {
    sx += LSAT[i];
    sy += GPA[i];
  }
  const mx = sx / indices.length;
  const my = sy / indices.length;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const i of indices) {
    sxy += (LSAT[i] - mx) * (GPA[i] - my);
    sxx += (LSAT[i] - mx) ** 2;
    syy += (GPA[i] - my) ** 2;
  }
  return sxx === 0 || syy === 0 ? null : sxy / Math.sqrt(sxx * syy);
}

describe('bootstrapItems', () => {
  it('reproduces the law-school example: r = 0.776, bootstrap SE ≈ 0.13 (Efron & Tibshirani)', () => {
    const replicates = new RunningStats();
    const result = bootstrapItems(
      LSAT.length,
      (indices) => {
        const r = correlation(indices);
        // The first call is the point estimate on the original items; the rest are replicates.
        if (r !== null && indices.some((v, i) => v !== i)) replicates.add(r);
        return r;
      },
      { resamples: 4000, seed: 'law-school' },
    );
    expect(result.value).toBeCloseTo(0.776, 3);
    // E&T report se_B ≈ 0.132 for B = 3200; a different random stream lands within a few 0.01.
    expect(replicates.result().standardDeviation).toBeGreaterThan(0.115);
    expect(replicates.result().standardDeviation).toBeLessThan(0.15);
    expect(result.interval?.lower).toBeGreaterThan(0.4);
    expect(result.interval?.upper).toBeLessThan(0.99);
    expect(result.interval?.method).toBe('percentile-bootstrap');
  });

  it('is reproducible: a fixed seed gives identical output, a pinned known answer', () => {
    const values = [2.5, 3, 7, 1, 4.5, 6, 6, 2, 9, 3.5];
    const a = bootstrapMean(values, { seed: 42 });
    const b = bootstrapMean(values, { seed: 42 });
    expect(a).toEqual(b);
    expect(a).toMatchObject({ value: 4.45, items: 10, resamples: 1000, discardedResamples: 0 });
    // Pinned (mulberry32, seed 42, 1000 resamples, type-7 percentiles):
    // a change here means reports computed before and after would differ.
    expect(a.interval?.lower).toBeCloseTo(PINNED.lower, 12);
    expect(a.interval?.upper).toBeCloseTo(PINNED.upper, 12);
    expect(bootstrapMean(values, { seed: 43 }).interval).not.toEqual(a.interval);
  });

  it('approaches the plug-in standard error of the mean, σ̂/√n', () => {
    const values = Array.from({ length: 200 }, (_, i) => ((i * 7919) % 101) / 10);
    const n = values.length;
    const mean = values.reduce((s, v) => s + v, 0) / n;
    const plugIn = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / n / n);
    const replicates = new RunningStats();
    bootstrapItems(
      n,
      (indices) => {
        let sum = 0;
        for (const i of indices) sum += values[i];
        replicates.add(sum / n);
        return sum / n;
      },
      { resamples: 4000, seed: 7 },
    );
    expect(replicates.result().standardDeviation).toBeGreaterThan(plugIn * 0.93);
    expect(replicates.result().standardDeviation).toBeLessThan(plugIn * 1.07);
  });

  it('answers null with a reason for no items, and no interval (with the reason) for one', () => {
    expect(bootstrapMean([])).toMatchObject({ value: null, reason: 'no items', interval: null });
    expect(bootstrapMean([null, Number.NaN])).toMatchObject({ value: null, items: 0 });
    // one item resampled is that item every time: a zero-width "interval" would claim certainty
    const one = bootstrapMean([5]);
    expect(one).toMatchObject({
      value: 5,
      interval: null,
      intervalReason: 'a single item gives no interval',
    });
  });

  it('discards resamples where the statistic is undefined and says so', () => {
    const result = bootstrapItems(3, (indices) => (indices.includes(0) ? 1 : null), {
      resamples: 200,
      seed: 1,
    });
    expect(result.value).toBe(1);
    // P(item 0 never drawn in 3 draws) = 8/27, so roughly 60 of 200.
    expect(result.discardedResamples).toBeGreaterThan(30);
    expect(result.discardedResamples).toBeLessThan(95);
    const never = bootstrapItems(2, (indices) => (indices[0] === 0 && indices[1] === 1 ? 1 : null), {
      resamples: 1,
      seed: 'x',
    });
    if (never.interval === null) expect(never.intervalReason).toMatch(/undefined on every resample/);
  });

  it('rejects nonsensical options', () => {
    expect(() => bootstrapMean([1, 2], { resamples: 0 })).toThrow(RangeError);
    expect(() => bootstrapMean([1, 2], { confidence: 1 })).toThrow(RangeError);
  });

  it('brackets the estimate, never yields NaN, and widens with confidence', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1000, max: 1000, noNaN: true }), { minLength: 2, maxLength: 40 }),
        fc.integer(),
        (values, seed) => {
          const narrow = bootstrapMean(values, { seed, resamples: 200, confidence: 0.5 });
          const wide = bootstrapMean(values, { seed, resamples: 200, confidence: 0.99 });
          expect(narrow.value).not.toBeNull();
          const lo = Math.min(...values);
          const hi = Math.max(...values);
          if (lo === hi) {
            // no spread among the items: no interval, and the reason (issue 36)
            for (const r of [narrow, wide])
              expect(r.intervalReason).toMatch(/every resample gave the same value/);
            return;
          }
          for (const r of [narrow, wide]) {
            expect(r.interval).not.toBeNull();
            expect(r.interval?.lower).toBeGreaterThanOrEqual(lo - 1e-9);
            expect(r.interval?.upper).toBeLessThanOrEqual(hi + 1e-9);
          }
          expect(wide.interval?.lower).toBeLessThanOrEqual((narrow.interval?.lower ?? 0) + 1e-9);
          expect(wide.interval?.upper).toBeGreaterThanOrEqual((narrow.interval?.upper ?? 0) - 1e-9);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('pairedBootstrap', () => {
  it('gives exactly the shift when b is a shifted copy of a', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -100, max: 100 }), { minLength: 2, maxLength: 40 }),
        fc.integer({ min: -10, max: 10 }),
        (a, shift) => {
          const b = a.map((v) => v - shift);
          const result = pairedBootstrap(a, b, { resamples: 100 });
          expect(result.value).toBeCloseTo(shift, 9);
          // every paired difference is the shift: no spread, so no (zero-width) interval (issue 36)
          expect(result.interval).toBeNull();
          expect(result.intervalReason).toMatch(/every resample gave the same value/);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('is far narrower than unpaired intervals when items differ much more than batches do', () => {
    const a = Array.from({ length: 300 }, (_, i) => (i % 10) * 10 + ((i * 37) % 7) / 10);
    const b = a.map((v, i) => v - 0.5 + ((i * 13) % 5) / 10);
    const paired = pairedBootstrap(a, b, { seed: 3 });
    const width = (r: typeof paired): number => (r.interval?.upper ?? 0) - (r.interval?.lower ?? 0);
    expect(paired.value).toBeCloseTo(0.5 - 0.2, 1);
    expect(width(paired)).toBeLessThan(width(bootstrapMean(a, { seed: 3 })) / 20);
    expect(paired.interval?.lower).toBeGreaterThan(0);
  });

  it('drops incomplete pairs, and accepts another statistic', () => {
    const a = [1, 2, null, 4, 10];
    const b = [0, 1, 5, Number.NaN, 0];
    expect(pairedBootstrap(a, b).items).toBe(3);
    const median = (xs: Float64Array): number => Float64Array.from(xs).sort()[Math.floor(xs.length / 2)];
    const result = pairedBootstrap(a, b, { statistic: median, resamples: 50 });
    expect(result.value).toBe(2 - 0);
    expect(() => pairedBootstrap([1], [1, 2])).toThrow(RangeError);
  });
});

// Also reproduced by an independent Python re-implementation (mulberry32 + numpy.percentile).
const PINNED = { lower: 2.94875, upper: 5.95 };

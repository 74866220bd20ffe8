import fc from 'fast-check';
import { CohenKappaAccumulator } from './cohen';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

function fromTable(labels: readonly string[], table: readonly (readonly number[])[]): CohenKappaAccumulator {
  const accumulator = new CohenKappaAccumulator(labels);
  table.forEach((row, i) =>
    row.forEach((count, j) => {
      for (let t = 0; t < count; t++) accumulator.add(labels[i], labels[j]);
    }),
  );
  return accumulator;
}

describe("Cohen's κ: known answers", () => {
  it('the Wikipedia example (50 proposals, yes/no; 20 / 5 / 10 / 15): p_o 0.7, p_e 0.5, κ 0.4', () => {
    const result = fromTable(
      ['yes', 'no'],
      [
        [20, 5],
        [10, 15],
      ],
    ).result();
    expect(result.value).toBeCloseTo(0.4, 12);
    expect(result.observedAgreement).toBeCloseTo(0.7, 12);
    expect(result.expectedAgreement).toBeCloseTo(0.5, 12);
    expect(result.confusion).toEqual([
      [20, 5],
      [10, 15],
    ]);
    expect(result.items).toBe(50);
  });

  it('the SAS PROC FREQ printout statsmodels tests against: κ 0.4842, ASE 0.1380, 95 % CI 0.2137–0.7547', () => {
    const result = fromTable(
      ['1', '2', '3'],
      [
        [0, 4, 1],
        [0, 8, 0],
        [0, 1, 5],
      ],
    ).result();
    expect(result.value).toBeCloseTo(0.4842, 4);
    expect(result.standardError).toBeCloseTo(0.138, 4);
    expect(result.interval).toMatchObject({ confidence: 0.95, method: 'asymptotic-standard-error' });
    expect(result.interval?.lower).toBeCloseTo(0.2137, 4);
    expect(result.interval?.upper).toBeCloseTo(0.7547, 4);
  });

  it('the irr "anxiety" data, raters 2 and 3: κ = −0.006289308 as R irr::kappa2', () => {
    const rater2 = [3, 6, 4, 6, 2, 4, 2, 4, 3, 3, 2, 3, 3, 3, 2, 2, 1, 3, 3, 4];
    const rater3 = [2, 1, 4, 4, 3, 2, 1, 6, 1, 1, 1, 2, 3, 3, 1, 1, 3, 3, 2, 2];
    const accumulator = new CohenKappaAccumulator();
    rater2.forEach((a, i) => accumulator.add(String(a), String(rater3[i])));
    expect(accumulator.result().value).toBeCloseTo(-0.006289308, 9);
  });
});

describe("Cohen's κ: undefined cases, bootstrap and properties", () => {
  it('answers null with a reason for no pairs and for one shared label', () => {
    const empty = new CohenKappaAccumulator();
    empty.add('APPROVE', null);
    expect(empty.result()).toMatchObject({
      value: null,
      reason: expect.stringMatching(/no items/),
      skipped: 1,
    });
    const same = new CohenKappaAccumulator();
    same.add('APPROVE', 'APPROVE');
    same.add('APPROVE', 'APPROVE');
    expect(same.result()).toMatchObject({
      value: null,
      interval: null,
      observedAgreement: 1,
      reason: expect.stringMatching(/same label/),
    });
    expect(same.bootstrap()).toMatchObject({ value: null });
  });

  it('gives a reproducible percentile bootstrap interval around κ', () => {
    const accumulator = fromTable(
      ['yes', 'no'],
      [
        [20, 5],
        [10, 15],
      ],
    );
    const a = accumulator.bootstrap({ seed: 'kappa' });
    expect(a).toEqual(accumulator.bootstrap({ seed: 'kappa' }));
    expect(a.value).toBeCloseTo(0.4, 12);
    expect(a.interval?.method).toBe('percentile-bootstrap');
    // Close to the asymptotic interval 0.4 ± 1.96 · 0.127 = 0.151–0.649.
    expect(a.interval?.lower).toBeGreaterThan(0.1);
    expect(a.interval?.lower).toBeLessThan(0.25);
    expect(a.interval?.upper).toBeGreaterThan(0.55);
    expect(a.interval?.upper).toBeLessThan(0.7);
  });

  const label = fc.constantFrom('APPROVE', 'REVISE', 'REJECT');

  it('is symmetric in the raters, at most 1, and 1 for perfect agreement', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(label, label), { maxLength: 40 }), (pairs) => {
        const ab = new CohenKappaAccumulator();
        const ba = new CohenKappaAccumulator();
        const same = new CohenKappaAccumulator();
        for (const [a, b] of pairs) {
          ab.add(a, b);
          ba.add(b, a);
          same.add(a, a);
        }
        const x = ab.result();
        const y = ba.result();
        if (x.value === null) {
          expect(y.value).toBeNull();
        } else {
          expect(y.value).toBeCloseTo(x.value, 12);
          expect(x.value).toBeLessThanOrEqual(1 + 1e-12);
          if (x.interval === null) {
            // a zero asymptotic variance (e.g. perfect agreement) gives no interval, with the reason
            expect(x.intervalReason).toMatch(/variance of κ is not positive/);
            expect(x.standardError).toBeNull();
          } else {
            expect(x.interval.lower).toBeGreaterThanOrEqual(-1);
            expect(x.interval.upper).toBeLessThanOrEqual(1);
            expect(Number.isFinite(x.standardError)).toBe(true);
          }
        }
        const perfect = same.result();
        if (perfect.value !== null) expect(perfect.value).toBeCloseTo(1, 12);
      }),
      { numRuns: RUNS },
    );
  });
});

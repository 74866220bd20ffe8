import fc from 'fast-check';
import { normalQuantile, twoSidedZ } from './normal';

describe('normalQuantile (AS 241)', () => {
  // Reference values: scipy.stats.norm.ppf (SciPy 1.17).
  const reference: [number, number][] = [
    [0.5, 0],
    [0.975, 1.959963984540054],
    [0.995, 2.5758293035489004],
    [0.9, 1.2815515655446004],
    [0.8, 0.8416212335729143],
    [0.3, -0.5244005127080409],
    [0.925, 1.4395314709384563],
    [0.075, -1.4395314709384563],
    [1e-10, -6.361340902404056],
    [0.999999, 4.753424308817087],
    [1e-300, -37.0470962993612],
  ];

  it.each(reference)('Φ⁻¹(%p) = %p to 1e-13 relative', (p, z) => {
    expect(Math.abs(normalQuantile(p) - z)).toBeLessThanOrEqual(1e-13 * Math.max(1, Math.abs(z)));
  });

  it('gives the usual critical values', () => {
    expect(twoSidedZ(0.95)).toBeCloseTo(1.959963984540054, 14);
    expect(twoSidedZ(0.99)).toBeCloseTo(2.5758293035489004, 13);
  });

  // Kept away from 0 and 1, where 1 − p itself is rounded and the test would measure that.
  it('is antisymmetric and increasing', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1e-6, max: 1 - 1e-6, noNaN: true }),
        fc.double({ min: 1e-6, max: 1 - 1e-6, noNaN: true }),
        (p, q) => {
          expect(normalQuantile(p) + normalQuantile(1 - p)).toBeCloseTo(0, 6);
          if (p < q) expect(normalQuantile(p)).toBeLessThanOrEqual(normalQuantile(q));
        },
      ),
    );
  });

  it('is infinite at the ends and rejects values outside [0, 1]', () => {
    expect(normalQuantile(0)).toBe(-Infinity);
    expect(normalQuantile(1)).toBe(Infinity);
    expect(() => normalQuantile(1.5)).toThrow(RangeError);
    expect(() => normalQuantile(Number.NaN)).toThrow(RangeError);
  });
});

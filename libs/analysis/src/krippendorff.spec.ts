import fc from 'fast-check';
import { KrippendorffAlphaAccumulator, krippendorffAlpha, type KrippendorffLevel } from './krippendorff';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

// Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), section C: 4 observers × 12
// units, '.' = missing. Rows are coders; the accumulator takes columns (units).
const _ = null;
const CODERS = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
  [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
];
const UNITS = CODERS[0].map((__, u) => CODERS.map((row) => row[u]));

describe("Krippendorff's α: the published reliability-data example", () => {
  it.each([
    ['nominal', 0.743],
    ['ordinal', 0.815],
    ['interval', 0.849],
    ['ratio', 0.797],
  ] as [KrippendorffLevel, number][])('%s α = %p', (level, published) => {
    const result = krippendorffAlpha(UNITS, level);
    expect(result.value).not.toBeNull();
    expect(result.value).toBeCloseTo(published, 3);
    expect(result).toMatchObject({ level, units: 12, pairableUnits: 11, pairableValues: 40, reason: null });
  });

  it('has the exact nominal value 1 − 39·10/(40² − Σn_c²) = 0.7434…', () => {
    // n_c = 9, 13, 10, 5, 3; observed disagreement sum = 40 − Σ o_cc = 40 − 32 = 8 off-diagonal.
    expect(krippendorffAlpha(UNITS, 'nominal').value).toBeCloseTo(1 - (39 * 8) / (1600 - 384), 12);
  });

  it('builds the coincidence matrix printed in the paper', () => {
    const accumulator = new KrippendorffAlphaAccumulator();
    for (const unit of UNITS) accumulator.addUnit(unit);
    const { values, matrix } = accumulator.coincidenceMatrix();
    expect(values).toEqual([1, 2, 3, 4, 5]);
    const third = 1 / 3;
    const expected = [
      [7, 4 * third, third, third, 0],
      [4 * third, 10, 4 * third, third, 0],
      [third, 4 * third, 8, third, 0],
      [third, third, third, 4, 0],
      [0, 0, 0, 0, 3],
    ];
    matrix.forEach((row, i) => row.forEach((cell, j) => expect(cell).toBeCloseTo(expected[i][j], 12)));
    expect(matrix.map((row) => row.reduce((a, b) => a + b, 0))).toEqual(
      [9, 13, 10, 5, 3].map((v) => expect.closeTo(v, 9)),
    );
  });
});

describe("Krippendorff's α: undefined cases answer null with a reason", () => {
  it('no units, no pairable unit, no variation, non-numeric interval data, negative ratio data', () => {
    expect(krippendorffAlpha([], 'interval')).toMatchObject({ value: null, reason: 'no units' });
    expect(krippendorffAlpha([[1], [null, 2], []], 'nominal')).toMatchObject({
      value: null,
      reason: expect.stringMatching(/two or more coders/),
      units: 3,
      pairableUnits: 0,
    });
    expect(
      krippendorffAlpha(
        [
          [3, 3, 3],
          [3, 3],
        ],
        'interval',
      ),
    ).toMatchObject({
      value: null,
      reason: expect.stringMatching(/same/),
    });
    expect(
      krippendorffAlpha(
        [
          [0.1, 0.1, 0.1],
          [0.1, 0.1],
        ],
        'interval',
      ).value,
    ).toBeNull();
    // n = 4 (3 × APPROVE, 1 × REJECT): α = 1 − 3 · 2 / (2 · 3 · 1) = 0.
    expect(
      krippendorffAlpha(
        [
          ['APPROVE', 'REJECT'],
          ['APPROVE', 'APPROVE'],
        ],
        'nominal',
      ).value,
    ).toBeCloseTo(0, 12);
    expect(
      krippendorffAlpha(
        [
          ['APPROVE', 'REJECT'],
          ['APPROVE', 'APPROVE'],
        ],
        'interval',
      ),
    ).toMatchObject({
      value: null,
      reason: expect.stringMatching(/numeric/),
    });
    expect(
      krippendorffAlpha(
        [
          [-1, 2],
          [2, 2],
        ],
        'ratio',
      ).reason,
    ).toMatch(/non-negative/);
    // one pairable unit: α would be 0 by construction (the "−2.22e-16, unreliable")
    expect(krippendorffAlpha([[1, 2, 3]], 'interval')).toMatchObject({
      value: null,
      reason: 'only one unit has values from two or more coders: α needs at least two units',
    });
  });

  it('never returns NaN or Infinity', () => {
    const unit = fc.array(fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }), { maxLength: 5 });
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 12 }), fc.constantFrom(...LEVELS), (units, level) => {
        const result = krippendorffAlpha(units, level);
        if (result.value === null) expect(result.reason.length).toBeGreaterThan(0);
        else {
          expect(Number.isFinite(result.value)).toBe(true);
          expect(result.value).toBeLessThanOrEqual(1 + 1e-12);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

const LEVELS: KrippendorffLevel[] = ['nominal', 'ordinal', 'interval', 'ratio'];

/** Straight from the definitions, pair by pair, for comparison. */
function referenceAlpha(
  units: readonly (readonly (number | null)[])[],
  level: KrippendorffLevel,
): number | null {
  const pairable = units.map((u) => u.filter((v): v is number => v !== null)).filter((u) => u.length >= 2);
  const all = pairable.flat();
  const n = all.length;
  const counts = new Map<number, number>();
  for (const v of all) counts.set(v, (counts.get(v) ?? 0) + 1);
  const delta = (c: number, k: number): number => {
    if (level === 'nominal') return c === k ? 0 : 1;
    if (level === 'interval') return (c - k) ** 2;
    if (level === 'ratio') return c + k === 0 ? 0 : ((c - k) / (c + k)) ** 2;
    const [lo, hi] = c <= k ? [c, k] : [k, c];
    let between = 0;
    for (const [g, ng] of counts) if (g >= lo && g <= hi) between += ng;
    return (between - ((counts.get(c) ?? 0) + (counts.get(k) ?? 0)) / 2) ** 2;
  };
  let observed = 0;
  for (const u of pairable) {
    for (let i = 0; i < u.length; i++)
      for (let j = 0; j < u.length; j++) if (i !== j) observed += delta(u[i], u[j]) / (u.length - 1);
  }
  let expected = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (i !== j) expected += delta(all[i], all[j]);
  // α is undefined below two pairable units (Conclave's rule: with one unit the expected
  // disagreement is computed from the very values it is compared with, so α is 0 by construction).
  if (n === 0 || counts.size < 2 || pairable.length < 2) return null;
  return 1 - ((n - 1) * observed) / expected;
}

describe("Krippendorff's α: properties", () => {
  const value = fc.option(fc.integer({ min: 0, max: 6 }), { nil: null, freq: 4 });
  const table = fc.array(fc.array(value, { minLength: 0, maxLength: 5 }), { minLength: 0, maxLength: 15 });

  it('equals a pair-by-pair computation from the definitions, at every level', () => {
    fc.assert(
      fc.property(table, fc.constantFrom(...LEVELS), (units, level) => {
        const expected = referenceAlpha(units, level);
        const actual = krippendorffAlpha(units, level).value;
        if (expected === null) expect(actual).toBeNull();
        else expect(actual).toBeCloseTo(expected, 9);
      }),
      { numRuns: RUNS },
    );
  });

  it('does not depend on the order of units or of coders within a unit', () => {
    fc.assert(
      fc.property(table, fc.constantFrom(...LEVELS), (units, level) => {
        const shuffled = [...units].reverse().map((u) => [...u].reverse());
        const a = krippendorffAlpha(units, level).value;
        const b = krippendorffAlpha(shuffled, level).value;
        if (a === null) expect(b).toBeNull();
        else expect(b).toBeCloseTo(a, 9);
      }),
      { numRuns: RUNS },
    );
  });

  it('interval α is unchanged by a linear rescaling of the scores (1–5 vs 0–100)', () => {
    fc.assert(
      fc.property(
        table,
        fc.double({ min: 0.1, max: 50, noNaN: true }),
        fc.integer({ min: -50, max: 50 }),
        (units, a, b) => {
          const scaled = units.map((u) => u.map((v) => (v === null ? null : a * v + b)));
          const x = krippendorffAlpha(units, 'interval').value;
          const y = krippendorffAlpha(scaled, 'interval').value;
          if (x === null) expect(y).toBeNull();
          else expect(y).toBeCloseTo(x, 6);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('is 1 when every unit is unanimous and the units differ', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 2, max: 5 })), {
          minLength: 2,
          maxLength: 10,
        }),
        fc.constantFrom(...LEVELS),
        (spec, level) => {
          const units = spec.map(([v, m]) => new Array<number>(m).fill(v));
          const result = krippendorffAlpha(units, level);
          if (new Set(spec.map(([v]) => v)).size < 2) expect(result.value).toBeNull();
          else expect(result.value).toBeCloseTo(1, 12);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

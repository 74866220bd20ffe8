import type { Estimate } from './result';

/**
 * Scale of the ratings. nominal: categories (verdicts); ordinal: ranked categories; interval:
 * numbers whose differences mean something (dimension scores); ratio: interval with a true zero.
 */
export type KrippendorffLevel = 'nominal' | 'ordinal' | 'interval' | 'ratio';

/** One coder's value for a unit: a number, or a category label. */
export type CodedValue = number | string;

export type KrippendorffAlphaResult = Estimate & {
  readonly level: KrippendorffLevel;
  /** Units fed in, including those that could not be paired. */
  readonly units: number;
  /** Units with values from at least two coders; only these carry information about agreement. */
  readonly pairableUnits: number;
  /** n in Krippendorff's notation: the number of values in pairable units. */
  readonly pairableValues: number;
  /** D_o, the observed disagreement; null when α is not computable. */
  readonly observedDisagreement: number | null;
  /** D_e, the disagreement expected by chance; null when α is not computable. */
  readonly expectedDisagreement: number | null;
};

export interface CoincidenceMatrix {
  /** Distinct values, numbers ascending first, then labels in sorted order. */
  readonly values: readonly CodedValue[];
  /** matrix[i][j] = o_(values[i], values[j]); symmetric, rows sum to the value's count n_c. */
  readonly matrix: readonly (readonly number[])[];
}

function isMissing(value: CodedValue | null | undefined): value is null | undefined {
  return value === null || value === undefined || (typeof value === 'number' && !Number.isFinite(value));
}

/**
 * Krippendorff's α (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011) from a
 * coincidence matrix built one unit (item) at a time, so a batch's rows are read once and never
 * held. Handles any number of coders per unit and missing values; a unit with fewer than two
 * values is counted but contributes nothing, as in the definition.
 *
 * Memory is the coincidence matrix: one cell per pair of distinct values that occurred together in
 * a unit, a handful for verdicts or 1–10 scores (at most Σ m_u² cells even for continuous values).
 * Nominal, ordinal and interval α are computed from it in time linear in its size; ratio α needs
 * all pairs of distinct values (quadratic), fine for rating scales, slow for tens of thousands of
 * distinct continuous values.
 */
export class KrippendorffAlphaAccumulator {
  private readonly indexOf = new Map<CodedValue, number>();
  private readonly distinct: CodedValue[] = [];
  /** n_c: how many pairable values equal distinct[c]. */
  private readonly marginals: number[] = [];
  /** o_ck for c ≤ k (the matrix is symmetric; the c < k cell stands for both halves). */
  private readonly coincidences = new Map<number, Map<number, number>>();
  private unitCount = 0;
  private pairableUnitCount = 0;
  private pairableValueCount = 0;

  /** Adds one unit: the values its coders gave (null/undefined/NaN for a coder who gave none). */
  addUnit(values: Iterable<CodedValue | null | undefined>): void {
    this.unitCount++;
    const counts = new Map<CodedValue, number>();
    let m = 0;
    for (const value of values) {
      if (isMissing(value)) continue;
      counts.set(value, (counts.get(value) ?? 0) + 1);
      m++;
    }
    if (m < 2) return;
    this.pairableUnitCount++;
    this.pairableValueCount += m;
    const entries = [...counts].map(([value, count]) => [this.index(value), count] as const);
    for (const [c, nc] of entries) {
      this.marginals[c] += nc;
      this.addCoincidence(c, c, (nc * (nc - 1)) / (m - 1));
    }
    for (let i = 0; i < entries.length; i++) {
      for (let j = i + 1; j < entries.length; j++) {
        const [c, nc] = entries[i];
        const [k, nk] = entries[j];
        this.addCoincidence(Math.min(c, k), Math.max(c, k), (nc * nk) / (m - 1));
      }
    }
  }

  private index(value: CodedValue): number {
    let index = this.indexOf.get(value);
    if (index === undefined) {
      index = this.distinct.length;
      this.indexOf.set(value, index);
      this.distinct.push(value);
      this.marginals.push(0);
    }
    return index;
  }

  private addCoincidence(c: number, k: number, amount: number): void {
    if (amount === 0) return;
    let row = this.coincidences.get(c);
    if (row === undefined) {
      row = new Map();
      this.coincidences.set(c, row);
    }
    row.set(k, (row.get(k) ?? 0) + amount);
  }

  /** The coincidence matrix over the values seen in pairable units, for display. */
  coincidenceMatrix(): CoincidenceMatrix {
    const order = this.distinct
      .map((value, index) => ({ value, index }))
      .filter(({ index }) => this.marginals[index] > 0)
      .sort((a, b) => compareCoded(a.value, b.value));
    const position = new Map(order.map(({ index }, i) => [index, i]));
    const matrix = order.map(() => order.map(() => 0));
    for (const [c, row] of this.coincidences) {
      for (const [k, amount] of row) {
        const i = position.get(c);
        const j = position.get(k);
        if (i === undefined || j === undefined) continue;
        matrix[i][j] = amount;
        matrix[j][i] = amount;
      }
    }
    return { values: order.map(({ value }) => value), matrix };
  }

  result(level: KrippendorffLevel): KrippendorffAlphaResult {
    const base = {
      level,
      units: this.unitCount,
      pairableUnits: this.pairableUnitCount,
      pairableValues: this.pairableValueCount,
    };
    const fail = (reason: string): KrippendorffAlphaResult => ({
      value: null,
      reason,
      ...base,
      observedDisagreement: null,
      expectedDisagreement: null,
    });
    if (this.pairableUnitCount === 0) {
      return fail(
        this.unitCount === 0
          ? 'no units'
          : 'no unit has values from two or more coders, so nothing can be compared',
      );
    }
    if (this.pairableUnitCount === 1) {
      // With one unit, the expected disagreement is measured on the same values as the observed
      // one, so α is 0 by construction (up to rounding), whatever the coders did.
      return fail('only one unit has values from two or more coders: α needs at least two units');
    }
    const present = this.distinct.map((_, c) => c).filter((c) => this.marginals[c] > 0);
    if (present.length < 2) {
      return fail('every value is the same, so there is no variation to agree or disagree on');
    }
    let delta: (c: number, k: number) => number;
    let expectedSum: number;
    const n = this.pairableValueCount;
    if (level === 'nominal') {
      delta = (c, k) => (c === k ? 0 : 1);
      let sumSquares = 0;
      for (const c of present) sumSquares += this.marginals[c] * this.marginals[c];
      expectedSum = n * n - sumSquares;
    } else {
      const numeric = new Map<number, number>();
      for (const c of present) {
        const value = this.distinct[c];
        if (typeof value !== 'number') return fail(`${level} α needs numeric values, got "${value}"`);
        numeric.set(c, value);
      }
      const num = (c: number): number => numeric.get(c) ?? 0;
      if (level === 'ratio') {
        if (present.some((c) => num(c) < 0)) return fail('ratio α needs non-negative values');
        delta = (c, k) => {
          const sum = num(c) + num(k);
          return sum === 0 ? 0 : ((num(c) - num(k)) / sum) ** 2;
        };
        expectedSum = this.pairwiseExpected(present, delta);
      } else {
        // Interval: δ = (c − k)². Ordinal: δ = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², which is the
        // squared difference of mid-ranks M_c = (values below c) + n_c/2, so both are squared
        // distances between positions and Σ n_c n_k δ has the closed form 2n Σ n_c (x_c − x̄)².
        const position = new Map<number, number>();
        if (level === 'interval') {
          for (const c of present) position.set(c, num(c));
        } else {
          let below = 0;
          for (const c of [...present].sort((a, b) => num(a) - num(b))) {
            position.set(c, below + this.marginals[c] / 2);
            below += this.marginals[c];
          }
        }
        const pos = (c: number): number => position.get(c) ?? 0;
        delta = (c, k) => (pos(c) - pos(k)) ** 2;
        let mean = 0;
        for (const c of present) mean += (this.marginals[c] * pos(c)) / n;
        let spread = 0;
        for (const c of present) spread += this.marginals[c] * (pos(c) - mean) ** 2;
        expectedSum = 2 * n * spread;
      }
    }
    let observedSum = 0;
    for (const [c, row] of this.coincidences) {
      for (const [k, amount] of row) if (c !== k) observedSum += 2 * amount * delta(c, k);
    }
    if (!(expectedSum > 0)) {
      return fail('the values do not vary on this scale, so agreement is undefined');
    }
    const value = 1 - ((n - 1) * observedSum) / expectedSum;
    return {
      value,
      reason: null,
      ...base,
      observedDisagreement: observedSum / n,
      expectedDisagreement: expectedSum / (n * (n - 1)),
    };
  }

  private pairwiseExpected(present: readonly number[], delta: (c: number, k: number) => number): number {
    let sum = 0;
    for (let i = 0; i < present.length; i++) {
      for (let j = i + 1; j < present.length; j++) {
        const c = present[i];
        const k = present[j];
        sum += 2 * this.marginals[c] * this.marginals[k] * delta(c, k);
      }
    }
    return sum;
  }
}

function compareCoded(a: CodedValue, b: CodedValue): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * α over a whole reliability table given unit by unit (an iterable, so it may be a generator over
 * database rows). Each unit lists the values its coders gave.
 */
export function krippendorffAlpha(
  units: Iterable<Iterable<CodedValue | null | undefined>>,
  level: KrippendorffLevel,
): KrippendorffAlphaResult {
  const accumulator = new KrippendorffAlphaAccumulator();
  for (const unit of units) accumulator.addUnit(unit);
  return accumulator.result(level);
}

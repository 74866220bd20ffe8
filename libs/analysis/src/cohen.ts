import { bootstrapItems, type BootstrapEstimate, type BootstrapOptions } from './bootstrap';
import { twoSidedZ } from './normal';
import { checkConfidence, type EstimateWithInterval } from './result';

export type CohenKappaResult = EstimateWithInterval & {
  /** Pairs where both raters gave a label. */
  readonly items: number;
  /** Pairs dropped because one side was missing. */
  readonly skipped: number;
  /** p_o, the share of items both raters labelled the same: the plain "how often the panel matches". */
  readonly observedAgreement: number | null;
  /** p_e, agreement expected from each rater's label frequencies alone. */
  readonly expectedAgreement: number | null;
  /** Asymptotic standard error of κ (Fleiss, Cohen & Everitt 1969); null when κ is null. */
  readonly standardError: number | null;
  /** Row and column labels of `confusion`. */
  readonly categories: readonly string[];
  /** confusion[i][j] = items rater A labelled categories[i] and rater B labelled categories[j]. */
  readonly confusion: readonly (readonly number[])[];
};

/**
 * Cohen's κ (Cohen 1960) between two raters over the same items, typically the panel's verdict
 * against a team's reference label, with the confusion matrix. Streaming: memory is the confusion
 * matrix plus two bytes per item per side (category codes) kept so that `bootstrap` can resample
 * items; 40 KB for 10 000 items.
 *
 * `result()` gives the interval κ ± z·SE with the large-sample standard error of Fleiss, Cohen &
 * Everitt (1969) — the one SAS PROC FREQ and statsmodels report as ASE — clipped to [−1, 1]. It is
 * poor for small samples or κ near ±1; `bootstrap()` gives a percentile interval over items instead.
 */
export class CohenKappaAccumulator {
  private readonly indexOf = new Map<string, number>();
  private readonly labels: string[] = [];
  private counts: number[][] = [];
  private codesA = new Uint16Array(64);
  private codesB = new Uint16Array(64);
  private size = 0;
  private skippedCount = 0;

  /**
   * Categories given up front fix the order of the confusion matrix rows and columns; `raters`
   * names the two sides in the reasons a result gives.
   */
  constructor(
    categories: readonly string[] = [],
    private readonly raters: { readonly a: string; readonly b: string } = { a: 'rater A', b: 'rater B' },
  ) {
    for (const category of categories) this.index(category);
  }

  /** One item: rater A's label and rater B's. A pair with either side missing is skipped. */
  add(a: string | null | undefined, b: string | null | undefined): void {
    if (a === null || a === undefined || b === null || b === undefined) {
      this.skippedCount++;
      return;
    }
    const i = this.index(a);
    const j = this.index(b);
    this.counts[i][j]++;
    if (this.size === this.codesA.length) {
      const grownA = new Uint16Array(this.size * 2);
      const grownB = new Uint16Array(this.size * 2);
      grownA.set(this.codesA);
      grownB.set(this.codesB);
      this.codesA = grownA;
      this.codesB = grownB;
    }
    this.codesA[this.size] = i;
    this.codesB[this.size] = j;
    this.size++;
  }

  private index(label: string): number {
    let index = this.indexOf.get(label);
    if (index === undefined) {
      index = this.labels.length;
      if (index > 0xffff) throw new RangeError('Cohen κ supports at most 65 536 categories');
      this.indexOf.set(label, index);
      this.labels.push(label);
      for (const row of this.counts) row.push(0);
      this.counts.push(new Array<number>(this.labels.length).fill(0));
    }
    return index;
  }

  result(confidence = 0.95): CohenKappaResult {
    checkConfidence(confidence);
    const base = {
      items: this.size,
      skipped: this.skippedCount,
      categories: [...this.labels],
      confusion: this.counts.map((row) => [...row]),
    };
    const fail = (reason: string, po: number | null, pe: number | null): CohenKappaResult => ({
      value: null,
      reason,
      interval: null,
      intervalReason: null,
      ...base,
      observedAgreement: po,
      expectedAgreement: pe,
      standardError: null,
    });
    if (this.size === 0) return fail('no items rated by both raters', null, null);
    const stats = kappaFromCounts(this.counts, this.size);
    if (stats.kappa === null) {
      return fail(
        'both raters used one and the same label throughout, so chance agreement is total and κ is undefined',
        stats.po,
        stats.pe,
      );
    }
    const rowsUsed = this.counts.filter((row) => row.some((count) => count > 0)).length;
    const columnsUsed = this.counts[0].filter((_, j) => this.counts.some((row) => row[j] > 0)).length;
    if (rowsUsed === 1 || columnsUsed === 1) {
      // Against a constant rater, observed and chance agreement coincide, so κ is 0 whatever the
      // other rater did: a number that says nothing about agreement.
      return fail(
        `${rowsUsed === 1 ? this.raters.a : this.raters.b} used one label throughout, so agreement beyond chance cannot be measured and κ is undefined`,
        stats.po,
        stats.pe,
      );
    }
    const se = asymptoticStandardError(this.counts, this.size, stats.kappa, stats.pe);
    if (!(se > 0)) {
      return {
        value: stats.kappa,
        reason: null,
        interval: null,
        intervalReason:
          'the asymptotic variance of κ is not positive for this table, so it gives no interval',
        ...base,
        observedAgreement: stats.po,
        expectedAgreement: stats.pe,
        standardError: null,
      };
    }
    const z = twoSidedZ(confidence);
    return {
      value: stats.kappa,
      reason: null,
      interval: {
        lower: Math.max(-1, stats.kappa - z * se),
        upper: Math.min(1, stats.kappa + z * se),
        confidence,
        method: 'asymptotic-standard-error',
      },
      intervalReason: null,
      ...base,
      observedAgreement: stats.po,
      expectedAgreement: stats.pe,
      standardError: se,
    };
  }

  /**
   * κ with a percentile bootstrap interval over items: no normality assumption, better for small
   * batches. Resamples on which κ is undefined (all drawn items share one label) are discarded and
   * counted.
   */
  bootstrap(options: BootstrapOptions = {}): BootstrapEstimate {
    const k = this.labels.length;
    const a = this.codesA.subarray(0, this.size);
    const b = this.codesB.subarray(0, this.size);
    const table = new Float64Array(k * k);
    const rows = new Float64Array(k);
    const columns = new Float64Array(k);
    return bootstrapItems(
      this.size,
      (indices) => {
        table.fill(0);
        rows.fill(0);
        columns.fill(0);
        for (let t = 0; t < indices.length; t++) {
          const i = a[indices[t]];
          const j = b[indices[t]];
          table[i * k + j]++;
          rows[i]++;
          columns[j]++;
        }
        const n = indices.length;
        let po = 0;
        let pe = 0;
        for (let i = 0; i < k; i++) {
          po += table[i * k + i];
          pe += rows[i] * columns[i];
        }
        po /= n;
        pe /= n * n;
        return pe >= 1 ? null : (po - pe) / (1 - pe);
      },
      options,
    );
  }
}

function kappaFromCounts(
  counts: readonly (readonly number[])[],
  n: number,
): { kappa: number | null; po: number; pe: number } {
  const k = counts.length;
  let diagonal = 0;
  let chance = 0;
  for (let i = 0; i < k; i++) {
    diagonal += counts[i][i];
    let row = 0;
    let column = 0;
    for (let j = 0; j < k; j++) {
      row += counts[i][j];
      column += counts[j][i];
    }
    chance += row * column;
  }
  const po = diagonal / n;
  const pe = chance / (n * n);
  // pe = 1 exactly when both raters used a single, identical label (integer arithmetic above).
  return { kappa: chance === n * n ? null : (po - pe) / (1 - pe), po, pe };
}

/**
 * Var(κ) = [Σ_i p_ii (1 − (p_i. + p_.i)(1 − κ))² + (1 − κ)² Σ_{i≠j} p_ij (p_.i + p_j.)²
 *           − (κ − p_e (1 − κ))²] / (n (1 − p_e)²)            (Fleiss, Cohen & Everitt 1969)
 */
function asymptoticStandardError(
  counts: readonly (readonly number[])[],
  n: number,
  kappa: number,
  pe: number,
): number {
  const k = counts.length;
  const rowShare = new Array<number>(k).fill(0);
  const columnShare = new Array<number>(k).fill(0);
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) {
      rowShare[i] += counts[i][j] / n;
      columnShare[j] += counts[i][j] / n;
    }
  }
  let a = 0;
  let b = 0;
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) {
      const p = counts[i][j] / n;
      if (p === 0) continue;
      if (i === j) a += p * (1 - (rowShare[i] + columnShare[i]) * (1 - kappa)) ** 2;
      else b += p * (columnShare[i] + rowShare[j]) ** 2;
    }
  }
  const c = (kappa - pe * (1 - kappa)) ** 2;
  const variance = (a + (1 - kappa) ** 2 * b - c) / (n * (1 - pe) ** 2);
  return Math.sqrt(Math.max(0, variance));
}

import {
  bootstrapMean,
  CategoryCounts,
  CohenKappaAccumulator,
  FleissKappaAccumulator,
  interpretAlpha,
  interpretKappa,
  KrippendorffAlphaAccumulator,
  LeniencyAccumulator,
  NumericSample,
  RunningStats,
  SeededRandom,
} from '@conclave/analysis';

/** A 10 000-item jury batch, produced row by row as a report would read it from the database. */
function* juryRows(items: number): Generator<{
  index: number;
  reference: string;
  jurors: { model: string; score: number | null; verdict: string | null; latencyMs: number }[];
}> {
  const rng = new SeededRandom('jury-batch');
  const verdicts = ['APPROVE', 'REVISE', 'REJECT'];
  const bias: Record<string, number> = { lenient: 1, neutral: 0, strict: -1 };
  for (let index = 0; index < items; index++) {
    const quality = 2 + rng.nextInt(7); // the item's true score, 2..8
    const truth = verdicts[quality >= 6 ? 0 : quality >= 4 ? 1 : 2];
    yield {
      index,
      reference: truth,
      jurors: Object.keys(bias).map((model) => {
        const failed = rng.next() < 0.02;
        const noise = rng.nextInt(3) - 1;
        const agrees = rng.next() < 0.8;
        return {
          model,
          score: failed ? null : quality + bias[model] + noise,
          verdict: failed ? null : agrees ? truth : verdicts[rng.nextInt(3)],
          latencyMs: 200 + rng.nextInt(1000),
        };
      }),
    };
  }
}

/** The most frequent verdict, ties to the first seen; null when there is none. */
function mostCommon(values: readonly (string | null)[]): string | null {
  const counts = new Map<string, number>();
  let best: string | null = null;
  for (const v of values) {
    if (v === null) continue;
    const n = (counts.get(v) ?? 0) + 1;
    counts.set(v, n);
    if (best === null || n > (counts.get(best) ?? 0)) best = v;
  }
  return best;
}

describe('a 10 000-item jury batch in one streaming pass', () => {
  it('recovers the planted leniency, agreement and reference agreement', () => {
    const alpha = new KrippendorffAlphaAccumulator();
    const fleiss = new FleissKappaAccumulator(['APPROVE', 'REVISE', 'REJECT']);
    const cohen = new CohenKappaAccumulator(['APPROVE', 'REVISE', 'REJECT']);
    const leniency = new LeniencyAccumulator();
    const verdicts = new CategoryCounts<string>(['APPROVE', 'REVISE', 'REJECT']);
    const latency = new NumericSample();
    const itemMeans = new NumericSample();
    const scores = new RunningStats();
    for (const row of juryRows(10_000)) {
      alpha.addUnit(row.jurors.map((j) => j.score));
      fleiss.addRatings(row.jurors.map((j) => j.verdict));
      leniency.addItem(row.jurors.map((j) => ({ rater: j.model, dimension: 'accuracy', score: j.score })));
      const majority = mostCommon(row.jurors.map((j) => j.verdict));
      cohen.add(majority, row.reference);
      verdicts.add(majority);
      const itemScores = new RunningStats();
      for (const j of row.jurors) {
        latency.add(j.latencyMs);
        scores.add(j.score);
        itemScores.add(j.score);
      }
      itemMeans.add(itemScores.mean);
    }
    const [accuracy] = leniency.result();
    const byRater = Object.fromEntries(accuracy.raters.map((r) => [r.rater, r.leniency]));
    expect(byRater.lenient).toBeCloseTo(1, 1);
    expect(byRater.neutral).toBeCloseTo(0, 1);
    expect(byRater.strict).toBeCloseTo(-1, 1);

    // Scores: true quality (variance 4) plus juror bias and ±1 noise, so α is high but not 1.
    const a = alpha.result('interval');
    expect(a.value).toBeGreaterThan(0.6);
    expect(a.value).toBeLessThan(0.9);
    expect(a.units).toBe(10_000);

    const f = fleiss.result();
    expect(f.fixedRaters).toBe(false);
    expect(f.value).toBeGreaterThan(0.4);
    expect(interpretKappa(f.value)).not.toBeNull();
    expect(interpretAlpha(a.value)).not.toBeNull();

    const k = cohen.result();
    expect(k.value).toBeGreaterThan(0.8);
    expect(k.interval?.lower).toBeLessThan(k.value ?? 0);

    expect(verdicts.total + verdicts.result().missing).toBe(10_000);
    expect(latency.summary().count).toBe(30_000);
    expect(latency.summary().p50).toBeGreaterThan(600);
    expect(latency.summary().p95).toBeGreaterThan(1100);
    expect(scores.result().count).toBeGreaterThan(29_000);

    const meanScore = bootstrapMean(itemMeans.values(), { seed: 'report' });
    expect(meanScore.interval?.lower).toBeLessThan(meanScore.value ?? 0);
    expect(meanScore.interval?.upper).toBeGreaterThan(meanScore.value ?? 0);
  });
});

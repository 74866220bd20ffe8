import fc from 'fast-check';
import { CouncilRankingAccumulator, type RankingBallot } from './ranking';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 100;

describe('CouncilRankingAccumulator: a worked example', () => {
  const accumulator = new CouncilRankingAccumulator();
  // Item 1: A is placed first twice. Ranks A 1,2,1; B 2,1,3; C 3,3,2.
  accumulator.addItem([
    { ranker: 'A', ranking: ['A', 'B', 'C'] },
    { ranker: 'B', ranking: ['B', 'A', 'C'] },
    { ranker: 'C', ranking: ['A', 'C', 'B'] },
  ]);
  // Item 2: C's ranking failed; A and B tie on 1.5, C is last on 3.
  accumulator.addItem(
    [
      { ranker: 'A', ranking: ['A', 'B', 'C'] },
      { ranker: 'B', ranking: ['B', 'A', 'C'] },
    ],
    ['A', 'B', 'C'],
  );
  const report = accumulator.result({ resamples: 200 });
  const byModel = Object.fromEntries(report.models.map((m) => [m.model, m]));

  it('averages ranks per item, then over items, best first', () => {
    expect(report).toMatchObject({ items: 2, ballots: 5 });
    expect(report.models.map((m) => m.model)).toEqual(['A', 'B', 'C']);
    expect(byModel.A.averageRank.value).toBeCloseTo((4 / 3 + 1.5) / 2, 12);
    expect(byModel.B.averageRank.value).toBeCloseTo((2 + 1.5) / 2, 12);
    expect(byModel.C.averageRank.value).toBeCloseTo((8 / 3 + 3) / 2, 12);
    expect(byModel.C).toMatchObject({ itemsRanked: 2, ballots: 5 });
  });

  it('splits a tied first place and counts Borda points (m − place)', () => {
    expect(byModel.A.firstPlaceShare.value).toBeCloseTo(0.75, 12);
    expect(byModel.B.firstPlaceShare.value).toBeCloseTo(0.25, 12);
    expect(byModel.C.firstPlaceShare.value).toBe(0);
    expect([byModel.A.bordaPoints, byModel.B.bordaPoints, byModel.C.bordaPoints]).toEqual([8, 6, 1]);
  });

  it('gives Borda points per item ranked a bootstrap interval (issue 36)', () => {
    for (const model of ['A', 'B', 'C'] as const) {
      const m = byModel[model];
      // Per item points sum to the total, so their mean is total / items ranked.
      expect(m.bordaPointsPerItem.value).toBeCloseTo(m.bordaPoints / m.itemsRanked, 12);
      expect(m.bordaPointsPerItem.items).toBe(m.itemsRanked);
      // an interval where the items' points vary; none (with the reason) where they do not
      if (m.bordaPointsPerItem.interval === null) {
        expect(m.bordaPointsPerItem.intervalReason).toMatch(/every resample gave the same value/);
      } else {
        expect(m.bordaPointsPerItem.interval.method).toBe('percentile-bootstrap');
      }
    }
  });

  it('measures self-preference as own rank minus the others’ mean rank (negative = favours itself)', () => {
    expect(byModel.A.selfPreference).toMatchObject({ items: 2, meanSelfRank: 1, meanOthersRank: 1.75 });
    expect(byModel.A.selfPreference.difference.value).toBeCloseTo(-0.75, 12);
    expect(byModel.B.selfPreference.difference.value).toBeCloseTo(-1.25, 12);
    expect(byModel.C.selfPreference).toMatchObject({ items: 1, meanSelfRank: 2, meanOthersRank: 3 });
    expect(byModel.C.selfPreference.difference.value).toBe(-1);
  });

  it('attaches reproducible bootstrap intervals', () => {
    expect(byModel.A.averageRank.interval?.method).toBe('percentile-bootstrap');
    expect(accumulator.result({ resamples: 200 })).toEqual(report);
  });
});

describe('CouncilRankingAccumulator: edge cases', () => {
  it('reports nothing rather than NaN for an empty batch or empty ballots', () => {
    const accumulator = new CouncilRankingAccumulator();
    expect(accumulator.result()).toEqual({ items: 0, ballots: 0, models: [] });
    accumulator.addItem([{ ranker: 'A', ranking: [] }], ['A', 'B']);
    expect(accumulator.result()).toEqual({ items: 1, ballots: 0, models: [] });
  });

  it('ignores repeated names in a ballot and has no self-preference without other rankers', () => {
    const accumulator = new CouncilRankingAccumulator();
    accumulator.addItem([{ ranker: 'A', ranking: ['B', 'A', 'B'] }]);
    const [b, a] = accumulator.result().models;
    expect(b).toMatchObject({ model: 'B', bordaPoints: 1 });
    expect(a.averageRank.value).toBe(2);
    expect(a.selfPreference.items).toBe(0);
    expect(a.selfPreference.difference).toMatchObject({ value: null, reason: 'no items' });
  });
});

describe('CouncilRankingAccumulator: properties', () => {
  const models = ['m1', 'm2', 'm3', 'm4'];
  const ballot: fc.Arbitrary<RankingBallot> = fc.record({
    ranker: fc.option(fc.constantFrom(...models), { nil: null }),
    ranking: fc.shuffledSubarray(models, { minLength: 1 }),
  });

  it('shares one first place per item, keeps ranks within 1..m and Borda totals consistent', () => {
    fc.assert(
      fc.property(fc.array(fc.array(ballot, { minLength: 1, maxLength: 4 }), { maxLength: 12 }), (items) => {
        const accumulator = new CouncilRankingAccumulator();
        let expectedBorda = 0;
        for (const ballots of items) {
          accumulator.addItem(ballots, models);
          for (const b of ballots)
            for (let p = 1; p <= b.ranking.length; p++) expectedBorda += models.length - p;
        }
        const report = accumulator.result({ resamples: 20 });
        const firstPlaces = report.models.reduce(
          (sum, m) => sum + (m.firstPlaceShare.value ?? 0) * m.itemsRanked,
          0,
        );
        expect(firstPlaces).toBeCloseTo(items.length, 9);
        expect(report.models.reduce((sum, m) => sum + m.bordaPoints, 0)).toBe(expectedBorda);
        for (const m of report.models) {
          expect((m.bordaPointsPerItem.value ?? 0) * m.itemsRanked).toBeCloseTo(m.bordaPoints, 9);
        }
        for (const m of report.models) {
          expect(m.averageRank.value).toBeGreaterThanOrEqual(1);
          expect(m.averageRank.value).toBeLessThanOrEqual(models.length);
          const d = m.selfPreference.difference.value;
          if (d !== null) expect(Math.abs(d)).toBeLessThanOrEqual(models.length - 1);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

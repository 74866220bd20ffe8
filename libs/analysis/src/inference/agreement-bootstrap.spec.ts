import { FleissKappaAccumulator } from '../fleiss';
import { KrippendorffAlphaAccumulator } from '../krippendorff';
import { SeededRandom } from '../random';
import { bootstrapStatistics, FleissKappaItems, IntervalAlphaUnits } from './agreement-bootstrap';

const VERDICTS = ['APPROVE', 'REVISE', 'REJECT'];

describe('agreement coefficients per item, for the item bootstrap', () => {
  it('draws each resample once for several statistics, skipping undefined resamples', () => {
    const values = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const mean = (indices: Uint32Array) => {
      let sum = 0;
      for (const i of indices) sum += values[i];
      return sum / indices.length;
    };
    const [a, b, never] = bootstrapStatistics(10, [mean, mean, () => null], { seed: 's', resamples: 200 });
    expect(a).toEqual(b);
    expect(a!.lower).toBeLessThan(5.5);
    expect(a!.upper).toBeGreaterThan(5.5);
    expect(never).toBeNull();
    expect(bootstrapStatistics(1, [mean], {})).toEqual([null]);
  });

  it('Fleiss κ over all items equals the accumulator’s, with varying raters and missing ratings', () => {
    const rng = new SeededRandom('fleiss');
    for (let trial = 0; trial < 20; trial++) {
      const items = new FleissKappaItems(VERDICTS);
      const accumulator = new FleissKappaAccumulator(VERDICTS);
      for (let i = 0; i < 30; i++) {
        const ratings = Array.from({ length: 1 + Math.floor(rng.next() * 4) }, () =>
          rng.next() < 0.1 ? null : VERDICTS[Math.floor(rng.next() * 3)],
        );
        items.addRatings(ratings);
        accumulator.addRatings(ratings);
      }
      const all = Array.from({ length: items.size }, (_, i) => i);
      const expected = accumulator.result().value;
      expect(items.kappa(all)).toBeCloseTo(expected!, 12);
    }
  });

  it('Fleiss κ: undefined when one category is used throughout; a 95 % item-bootstrap interval otherwise', () => {
    const same = new FleissKappaItems(VERDICTS);
    for (let i = 0; i < 5; i++) same.addRatings(['APPROVE', 'APPROVE', 'APPROVE']);
    expect(same.kappa([0, 1, 2, 3, 4])).toBeNull();
    expect(bootstrapStatistics(5, [(indices) => same.kappa(indices)], { seed: 's' })).toEqual([null]);

    const items = new FleissKappaItems(VERDICTS);
    for (let i = 0; i < 40; i++) {
      const v = VERDICTS[i % 3];
      items.addRatings(i % 4 === 0 ? [v, v, VERDICTS[(i + 1) % 3]] : [v, v, v]);
    }
    const all = Array.from({ length: 40 }, (_, i) => i);
    const value = items.kappa(all)!;
    const [interval] = bootstrapStatistics(40, [(indices) => items.kappa(indices)], {
      seed: 's',
      resamples: 300,
    });
    expect(value).toBeGreaterThan(0.5);
    expect(interval).toMatchObject({ method: 'percentile-bootstrap', confidence: 0.95 });
    expect(interval!.lower).toBeLessThan(value);
    expect(interval!.upper).toBeGreaterThan(value);
    expect(items.items).toBe(40);
  });

  it('interval α over all units equals the accumulator’s (Krippendorff’s definition)', () => {
    const rng = new SeededRandom('alpha');
    for (let trial = 0; trial < 20; trial++) {
      const units = new IntervalAlphaUnits();
      const accumulator = new KrippendorffAlphaAccumulator();
      for (let u = 0; u < 25; u++) {
        const base = 1 + Math.floor(rng.next() * 10);
        const values = Array.from({ length: 1 + Math.floor(rng.next() * 4) }, () =>
          rng.next() < 0.1 ? null : Math.min(10, Math.max(1, base + Math.round((rng.next() - 0.5) * 4))),
        );
        units.addUnit(values);
        accumulator.addUnit(values);
      }
      const all = Array.from({ length: units.size }, (_, i) => i);
      expect(units.alpha(all)).toBeCloseTo(accumulator.result('interval').value!, 10);
    }
  });

  it('α is undefined on one unit, however often it is drawn, and without variation', () => {
    const units = new IntervalAlphaUnits();
    units.addUnit([3, 5, 4]);
    units.addUnit([7]);
    expect(units.units).toBe(1);
    expect(units.size).toBe(2);
    expect(units.alpha([0, 0, 0])).toBeNull();
    expect(units.alpha([0, 1, 0, 1])).toBeNull();
    const flat = new IntervalAlphaUnits();
    flat.addUnit([5, 5]);
    flat.addUnit([5, 5, 5]);
    expect(flat.alpha([0, 1])).toBeNull();
  });

  it('α on a small fixed table equals the accumulator’s', () => {
    // Three coders, five units; the accumulator is itself checked against the definition in
    // krippendorff.spec.ts.
    const units = new IntervalAlphaUnits();
    const accumulator = new KrippendorffAlphaAccumulator();
    for (const unit of [
      [1, 1, 1],
      [2, 2, 3],
      [3, 3, 3],
      [4, 4, 4],
      [5, 5, 5],
    ]) {
      units.addUnit(unit);
      accumulator.addUnit(unit);
    }
    expect(units.alpha([0, 1, 2, 3, 4])).toBeCloseTo(accumulator.result('interval').value!, 12);
  });
});

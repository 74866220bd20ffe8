import { FleissKappaAccumulator } from '../fleiss';
import { KrippendorffAlphaAccumulator } from '../krippendorff';
import { SeededRandom } from '../random';
import { FleissKappaItems, IntervalAlphaUnits } from './agreement-bootstrap';

const VERDICTS = ['APPROVE', 'REVISE', 'REJECT'];

describe('agreement coefficients per item, for the item bootstrap', () => {
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
      const all = Array.from({ length: items.items }, (_, i) => i);
      const expected = accumulator.result().value;
      expect(items.kappa(all)).toBeCloseTo(expected!, 12);
    }
  });

  it('Fleiss κ: undefined when one category is used throughout; a 95 % item-bootstrap interval otherwise', () => {
    const same = new FleissKappaItems(VERDICTS);
    for (let i = 0; i < 5; i++) same.addRatings(['APPROVE', 'APPROVE', 'APPROVE']);
    expect(same.bootstrap({ seed: 's' }).value).toBeNull();

    const items = new FleissKappaItems(VERDICTS);
    for (let i = 0; i < 40; i++) {
      const v = VERDICTS[i % 3];
      items.addRatings(i % 4 === 0 ? [v, v, VERDICTS[(i + 1) % 3]] : [v, v, v]);
    }
    const estimate = items.bootstrap({ seed: 's', resamples: 300 });
    expect(estimate.value).toBeGreaterThan(0.5);
    expect(estimate.interval).toMatchObject({ method: 'percentile-bootstrap', confidence: 0.95 });
    expect(estimate.interval!.lower).toBeLessThan(estimate.value!);
    expect(estimate.interval!.upper).toBeGreaterThan(estimate.value!);
    expect(estimate.items).toBe(40);
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
      const all = Array.from({ length: units.units }, (_, i) => i);
      expect(units.alpha(all)).toBeCloseTo(accumulator.result('interval').value!, 10);
    }
  });

  it('α is undefined on one unit, however often it is drawn, and without variation', () => {
    const units = new IntervalAlphaUnits();
    units.addUnit([3, 5, 4]);
    units.addUnit([7]);
    expect(units.units).toBe(1);
    expect(units.alpha([0, 0, 0])).toBeNull();
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

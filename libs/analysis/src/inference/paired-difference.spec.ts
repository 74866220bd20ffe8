import { twoSidedZ } from '../normal';
import { tangoPairedInterval, tangoScore } from './paired-difference';

describe('tangoPairedInterval', () => {
  it('matches R’s contingencytables for Cavo et al. (2012): 6 and 16 discordant of 161 → −0.0621 [−0.1240, −0.0054]', () => {
    // contingencytables tests: Tango_asymptotic_score_CI_paired_2x2(rbind(c(59, 6), c(16, 80)))
    // prints "estimate = -0.0621 (95% CI -0.1240 to -0.0054)".
    const interval = tangoPairedInterval(6, 16, 161);
    expect(interval?.method).toBe('tango-score');
    expect(interval?.lower).toBeCloseTo(-0.124, 4);
    expect(interval?.upper).toBeCloseTo(-0.0054, 4);
    // The same table the other way round is the mirror image.
    const mirrored = tangoPairedInterval(16, 6, 161);
    expect(mirrored?.lower).toBeCloseTo(-(interval?.upper ?? 0), 9);
    expect(mirrored?.upper).toBeCloseTo(-(interval?.lower ?? 0), 9);
  });

  it('has its score at ±z on its bounds and 0 at the estimate', () => {
    const z = twoSidedZ(0.95);
    const interval = tangoPairedInterval(44, 19, 300);
    expect(tangoScore(44, 19, 300, 25 / 300)).toBeCloseTo(0, 12);
    expect(tangoScore(44, 19, 300, interval?.upper ?? 0)).toBeCloseTo(-z, 6);
    expect(tangoScore(44, 19, 300, interval?.lower ?? 0)).toBeCloseTo(z, 6);
  });

  it('keeps a width when no item is discordant: ±z²/(n + z²)', () => {
    const z = twoSidedZ(0.95);
    const interval = tangoPairedInterval(0, 0, 100);
    expect(interval?.upper).toBeCloseTo((z * z) / (100 + z * z), 9);
    expect(interval?.lower).toBeCloseTo(-(z * z) / (100 + z * z), 9);
  });

  it('stays within [−1, 1], and is null without items', () => {
    expect(tangoPairedInterval(5, 0, 5)).toMatchObject({ upper: 1 });
    expect(tangoPairedInterval(5, 0, 5)?.lower).toBeGreaterThan(0);
    expect(tangoPairedInterval(0, 5, 5)).toMatchObject({ lower: -1 });
    expect(tangoPairedInterval(0, 0, 0)).toBeNull();
    expect(() => tangoPairedInterval(3, 3, 5)).toThrow(RangeError);
  });
});

import { interpretAlpha, interpretKappa } from './interpret';

describe('interpretKappa (Landis & Koch 1977)', () => {
  it.each([
    [-0.1, 'poor'],
    [0, 'slight'],
    [0.2, 'slight'],
    [0.21, 'fair'],
    [0.4, 'fair'],
    [0.41, 'moderate'],
    [0.6, 'moderate'],
    [0.61, 'substantial'],
    [0.8, 'substantial'],
    [0.81, 'almost perfect'],
    [1, 'almost perfect'],
  ])('κ = %p reads "%s"', (kappa, reading) => {
    expect(interpretKappa(kappa)).toBe(reading);
  });

  it('has no reading for a missing value', () => {
    expect(interpretKappa(null)).toBeNull();
    expect(interpretKappa(Number.NaN)).toBeNull();
  });
});

describe('interpretAlpha (Krippendorff)', () => {
  it.each([
    [1, 'reliable'],
    [0.8, 'reliable'],
    [0.799, 'tentative'],
    [0.667, 'tentative'],
    [0.666, 'unreliable'],
    [-0.2, 'unreliable'],
  ])('α = %p reads "%s"', (alpha, reading) => {
    expect(interpretAlpha(alpha)).toBe(reading);
  });

  it('reads the published example values', () => {
    expect(interpretAlpha(0.743)).toBe('tentative');
    expect(interpretAlpha(0.849)).toBe('reliable');
    expect(interpretAlpha(null)).toBeNull();
  });
});

/**
 * The conventional verbal readings of agreement coefficients, so reports use the words a reviewer
 * expects. They are conventions, not tests: both authors warn against treating the cut-offs as
 * exact.
 */

export type KappaReading = 'poor' | 'slight' | 'fair' | 'moderate' | 'substantial' | 'almost perfect';

/** Landis & Koch (1977), Biometrics 33:159–174. Upper bounds are inclusive (0.20 is "slight"). */
export const KAPPA_SCALE: readonly { readonly reading: KappaReading; readonly upTo: number }[] = [
  { reading: 'poor', upTo: 0 },
  { reading: 'slight', upTo: 0.2 },
  { reading: 'fair', upTo: 0.4 },
  { reading: 'moderate', upTo: 0.6 },
  { reading: 'substantial', upTo: 0.8 },
  { reading: 'almost perfect', upTo: 1 },
];

/** Landis & Koch reading of a κ value; null for a missing κ. Values below 0 are "poor". */
export function interpretKappa(kappa: number | null): KappaReading | null {
  if (kappa === null || !Number.isFinite(kappa)) return null;
  if (kappa < 0) return 'poor';
  for (const { reading, upTo } of KAPPA_SCALE) {
    if (reading !== 'poor' && kappa <= upTo) return reading;
  }
  return 'almost perfect';
}

export type AlphaReading = 'reliable' | 'tentative' | 'unreliable';

/**
 * Krippendorff (2004, Content Analysis §11.4.4): rely on data with α ≥ 0.800; α ≥ 0.667 allows
 * only tentative conclusions; below that, the data are not reliable enough to draw conclusions.
 */
export const ALPHA_THRESHOLDS = { reliable: 0.8, tentative: 0.667 } as const;

/** Krippendorff's reading of an α value; null for a missing α. */
export function interpretAlpha(alpha: number | null): AlphaReading | null {
  if (alpha === null || !Number.isFinite(alpha)) return null;
  if (alpha >= ALPHA_THRESHOLDS.reliable) return 'reliable';
  if (alpha >= ALPHA_THRESHOLDS.tentative) return 'tentative';
  return 'unreliable';
}

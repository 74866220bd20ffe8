import { hashString, seededRandom } from '@conclave/llm';

/** `Response A`, `Response B`, … */
export const responseLabel = (index: number): string => `Response ${String.fromCharCode(65 + index)}`;

/**
 * A Fisher-Yates shuffle driven by a seed: random per deliberation when the seed is its id, and
 * the same every time for the same seed, so a retried stage relabels nothing.
 */
export function shuffleWithSeed<T>(items: readonly T[], seed: string): T[] {
  const random = seededRandom(hashString(seed));
  const shuffled = [...items];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  return shuffled;
}

/** `Response A` → the first model, `Response B` → the second, … in the order given. */
export const labelMapOf = (models: readonly string[]): Record<string, string> =>
  Object.fromEntries(models.map((model, i) => [responseLabel(i), model]));

import fc from 'fast-check';
import { anyText, modeChunks, RUNS, textFor, utf16Text } from '../testing/hostile-text';
import { cleanTitle, fallbackTitle } from './title';

/** No lone surrogate: what String.prototype.isWellFormed checks (ES2024). */
const wellFormed = (text: string) =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

describe('titles: any string in, a short one-line title out', () => {
  it('cleanTitle gives null or a trimmed, one-line title of at most 80 characters, whole if the input was', () => {
    fc.assert(
      fc.property(fc.oneof(textFor(modeChunks.title), anyText, utf16Text), (raw) => {
        const title = cleanTitle(raw);
        if (title === null) return;
        expect(title.length).toBeGreaterThan(0);
        expect(title.length).toBeLessThanOrEqual(80);
        expect(title).toBe(title.trim());
        expect(title).not.toMatch(/[\n\r\u2028\u2029"'`*_#]/);
        if (wellFormed(raw)) expect(wellFormed(title)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('fallbackTitle gives at most 80 characters, whole if the question was', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, utf16Text), (question) => {
        const title = fallbackTitle(question);
        expect(title.length).toBeLessThanOrEqual(80);
        if (wellFormed(question)) expect(wellFormed(title)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });
});

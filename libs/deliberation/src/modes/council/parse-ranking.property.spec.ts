import fc from 'fast-check';
import { ALL_LABELS, modeChunks, RUNS, shownLabels, textFor } from '../../testing/hostile-text';

const anyText = textFor(modeChunks.council);
import { parseRanking } from './parse-ranking';

describe('parseRanking: any string in, a ranking of shown labels out', () => {
  it('never throws; only labels that were shown, each at most once; level 0 exactly when empty', () => {
    fc.assert(
      fc.property(anyText, shownLabels, (text, shown) => {
        const { labels, level } = parseRanking(text, shown);
        expect([0, 1, 2, 3, 4]).toContain(level);
        expect(labels.every((l) => shown.includes(l))).toBe(true);
        expect(new Set(labels).size).toBe(labels.length);
        expect(labels.length === 0).toBe(level === 0);
        expect(parseRanking(text, shown)).toEqual({ labels, level });
      }),
      { numRuns: RUNS },
    );
  });

  it("reads the evaluator's own final FINAL RANKING, whatever it wrote or quoted before", () => {
    const shown = ALL_LABELS.slice(0, 6);
    fc.assert(
      fc.property(anyText, fc.shuffledSubarray(shown, { minLength: 1 }), (before, own) => {
        const text = `${before}\nFINAL RANKING:\n${own.map((l, i) => `${i + 1}. ${l}`).join('\n')}`;
        expect(parseRanking(text, shown)).toEqual({ labels: own, level: 1 });
      }),
      { numRuns: RUNS },
    );
  });
});

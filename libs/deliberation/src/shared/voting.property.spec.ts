import fc from 'fast-check';
import { ALL_LABELS, modeChunks, RUNS, textFor } from '../testing/hostile-text';

const anyText = textFor(modeChunks.vote);
import { parseVote, tallyVotes } from './voting';

describe('parseVote: any string in, a label or null out', () => {
  it('never throws and returns `Response X` for a letter the text names, or null', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const vote = parseVote(text);
        if (vote === null) return;
        expect(vote).toMatch(/^Response [A-Z]$/);
        expect(text.toUpperCase()).toContain(vote.at(-1));
      }),
      { numRuns: RUNS },
    );
  });

  it("takes the voter's own last VOTE line over every vote it wrote or quoted before", () => {
    fc.assert(
      fc.property(anyText, fc.constantFrom(...ALL_LABELS), (before, own) => {
        expect(parseVote(`${before}\nVOTE: ${own}`)).toBe(own);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('tallyVotes: any votes in, a consistent tally out', () => {
  const vote = fc.oneof(fc.constant(null), fc.constantFrom(...ALL_LABELS), anyText);
  it('counts every vote once, valid or not, and names the leaders among the labels', () => {
    fc.assert(
      fc.property(fc.array(vote, { maxLength: 12 }), fc.nat(8), (votes, n) => {
        const labels = ALL_LABELS.slice(0, n);
        const tally = tallyVotes(votes, labels);
        expect(tally.validVoteCount + tally.invalidVoteCount).toBe(votes.length);
        expect(Object.values(tally.tallies).reduce((a, b) => a + b, 0)).toBe(tally.validVoteCount);
        expect(Object.keys(tally.tallies).every((l) => labels.includes(l))).toBe(true);
        expect(tally.winners).toEqual([...tally.winners].sort());
        expect(tally.winners.every((w) => labels.includes(w))).toBe(true);
        expect(tally.isTie).toBe(tally.winners.length > 1);
        expect(tally.tiedLabels).toEqual(tally.isTie ? tally.winners : []);
        if (tally.validVoteCount === 0) expect(tally.winners).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });
});

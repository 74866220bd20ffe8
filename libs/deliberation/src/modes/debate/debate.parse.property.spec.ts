import fc from 'fast-check';
import { modeChunks, RUNS, textFor } from '../../testing/hostile-text';
import { parseRevision, revisedResponseOf, wordCount } from './debate.parse';

const DECISIONS = ['REVISE', 'STAND', 'MERGE'] as const;
const anyText = textFor(modeChunks.debate);

describe('parseRevision: any string in, a decision of 04-debate.md or null out', () => {
  it('never throws; decision is REVISE, STAND, MERGE or null; texts are trimmed, non-empty parts of the input', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const { decision, reasoning, revisedResponse } = parseRevision(text);
        expect([...DECISIONS, null]).toContain(decision);
        for (const part of [reasoning, revisedResponse]) {
          if (part === null) continue;
          expect(part.length).toBeGreaterThan(0);
          expect(part).toBe(part.trim());
          expect(text).toContain(part);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('revisedResponseOf gives the original or a trimmed, non-empty part of the revision', () => {
    fc.assert(
      fc.property(anyText, fc.string({ maxLength: 40 }), (text, original) => {
        const revised = revisedResponseOf(text, original);
        if (revised === original) return;
        expect(revised.length).toBeGreaterThan(0);
        expect(revised).toBe(revised.trim());
        expect(text).toContain(revised);
        expect(wordCount(revised)).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: RUNS },
    );
  });

  it("reads the debater's own last DECISION block, not one it quoted before, nor a line inside its answer", () => {
    const marker = /REVISED[ \t]*RESPONSE/i;
    fc.assert(
      fc.property(
        anyText,
        fc.constantFrom(...DECISIONS),
        fc.stringMatching(/^[a-z][a-z ,.]{0,40}[a-z.]$/),
        anyText.filter((body) => !marker.test(body) && body.trim().length > 0),
        (before, decision, reasoning, body) => {
          const text = `${before}\nDECISION: ${decision}\nREASONING: ${reasoning}\n\nREVISED RESPONSE:\n${body}`;
          expect(parseRevision(text)).toEqual({ decision, reasoning, revisedResponse: body.trim() });
          expect(revisedResponseOf(text, 'original')).toBe(body.trim());
        },
      ),
      { numRuns: RUNS },
    );
  });
});

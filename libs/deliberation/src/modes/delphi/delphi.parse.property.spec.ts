import fc from 'fast-check';
import { modeChunks, numberText, RUNS, textFor } from '../../testing/hostile-text';
import {
  matchOption,
  parseAnswer,
  parseClassification,
  parseConfidence,
  parseEstimate,
  parseNumber,
  parseReasoning,
} from './delphi.parse';

const anyText = textFor(modeChunks.delphi);
const finiteOrNull = (value: number | null) => value === null || Number.isFinite(value);
const options: fc.Arbitrary<readonly string[] | null> = fc.oneof(
  fc.constant(null),
  fc.array(fc.string({ maxLength: 30 }), { maxLength: 6 }),
  fc.constant(['Monorepo', 'Polyrepo', 'Hybrid (monorepo for core, polyrepo for services)']),
);

describe('Delphi parsers: any string in, the shapes of 05-delphi.md out', () => {
  it('parseNumber and parseEstimate give a finite number or null, never NaN or Infinity', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, numberText), (text) => {
        expect(finiteOrNull(parseNumber(text))).toBe(true);
        const { estimate, fromLine } = parseEstimate(text);
        expect(finiteOrNull(estimate)).toBe(true);
        expect(typeof fromLine).toBe('boolean');
        if (fromLine) expect(estimate).not.toBeNull();
      }),
      { numRuns: RUNS },
    );
  });

  it('parseConfidence is LOW, MEDIUM or HIGH, and MEDIUM whenever it could not be read', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const { confidence, parsed } = parseConfidence(text);
        expect(['LOW', 'MEDIUM', 'HIGH']).toContain(confidence);
        if (!parsed) expect(confidence).toBe('MEDIUM');
      }),
      { numRuns: RUNS },
    );
  });

  it('parseReasoning is a trimmed part of the text', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const reasoning = parseReasoning(text);
        expect(reasoning).toBe(reasoning.trim());
        expect(text).toContain(reasoning);
      }),
      { numRuns: RUNS },
    );
  });

  it('parseAnswer and matchOption give one of the options, or the answer itself as a one-line category', () => {
    fc.assert(
      fc.property(anyText, options, (text, opts) => {
        const answer = parseAnswer(text, opts);
        if (answer !== null) {
          expect(answer.length).toBeGreaterThan(0);
          expect(answer).not.toContain('\n');
          if (!opts?.includes(answer)) expect(text).toContain(answer);
        }
        const matched = matchOption(text, opts);
        if (!opts?.includes(matched)) expect(text).toContain(matched);
      }),
      { numRuns: RUNS },
    );
  });

  it('parseClassification is null or a type with options only when qualitative', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const classification = parseClassification(text);
        if (classification === null) return;
        expect(['numeric', 'qualitative']).toContain(classification.type);
        expect(typeof classification.reasoning).toBe('string');
        if (classification.options === null) return;
        expect(classification.type).toBe('qualitative');
        expect(classification.options.length).toBeGreaterThan(0);
        for (const option of classification.options) {
          expect(option.length).toBeGreaterThan(0);
          expect(option).toBe(option.trim());
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("reads the panelist's own last ESTIMATE, CONFIDENCE and ANSWER lines over any written or quoted before", () => {
    fc.assert(
      fc.property(
        anyText,
        fc.integer({ min: -1e9, max: 1e9 }),
        fc.constantFrom('LOW', 'MEDIUM', 'HIGH'),
        fc.constantFrom('Monorepo', 'Polyrepo', '2', 'Option 3'),
        (before, value, confidence, answer) => {
          const opts = ['Monorepo', 'Polyrepo', 'Hybrid'];
          const text = `${before}\nESTIMATE: ${value}\nANSWER: ${answer}\nCONFIDENCE: ${confidence}\nREASONING: mine`;
          expect(parseEstimate(text)).toEqual({ estimate: value, fromLine: true });
          expect(parseConfidence(text)).toEqual({ confidence, parsed: true });
          expect(parseAnswer(text, opts)).toBe(matchOption(answer, opts));
          expect(parseReasoning(text)).toBe('mine');
        },
      ),
      { numRuns: RUNS },
    );
  });
});

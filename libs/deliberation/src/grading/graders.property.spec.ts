import type { Grading } from '@conclave/contracts';
import fc from 'fast-check';
import {
  anyText,
  asciiText,
  controlText,
  hostileDocument,
  numberText,
  RUNS,
  unicodeText,
  utf16Text,
} from '../testing/hostile-text';
import { readChoice } from './choice';
import { gradeAnswer, type LocalGrading } from './graders';
import { parseModelVerdict } from './model-grader';
import { readNumbers } from './numbers';
import { lastMatchBounded, regexSafetyProblem } from './regex-guard';
import { finalAnswerLine, normalizeText } from './text';
import { checkGrading } from './validate';

/** Replies of every kind: random, hostile documents, numbers in odd formats, huge runs. */
const reply = fc.oneof(
  asciiText,
  unicodeText,
  controlText,
  utf16Text,
  hostileDocument,
  anyText,
  numberText,
  fc.tuple(asciiText, numberText, asciiText).map(([a, n, b]) => `${a} ${n} ${b}`),
  fc
    .tuple(
      fc.constantFrom('FINAL ANSWER:', '**Final answer:**', 'Answer:', 'the answer is'),
      fc.oneof(numberText, asciiText),
    )
    .map(([label, rest]) => `${label} ${rest}`),
  fc.constantFrom('', ' ', '\n\n\t ', '\u00a0\u2003', 'FINAL ANSWER:', '> FINAL ANSWER: 3'),
);

const LOCAL_GRADINGS: LocalGrading[] = [
  { expected: 'Paris', grader: { type: 'exact' } },
  { expected: 'Paris', grader: { type: 'normalized' } },
  { expected: 'New York', grader: { type: 'contains' } },
  { expected: 'Paris', grader: { type: 'contains', caseSensitive: true, extract: 'whole' } },
  { expected: 'B', grader: { type: 'choice', options: ['w', 'x', 'y', 'z'] } },
  { expected: 42, grader: { type: 'numeric' } },
  { expected: -3.5, grader: { type: 'numeric', absoluteTolerance: 0.1, extract: 'final-answer' } },
  { expected: 1000, grader: { type: 'numeric', relativeTolerance: 0.01, extract: 'last-number' } },
  { expected: null, grader: { type: 'regex', pattern: '\\bparis\\b', flags: 'i' } },
  { expected: '42', grader: { type: 'regex', pattern: 'answer:\\s*(\\d+)', flags: 'i', group: 1 } },
];

describe('graders on hostile and malformed text (property)', () => {
  it('every grader answers a well-formed grade for any reply, and never throws', () => {
    fc.assert(
      fc.property(reply, fc.constantFrom(...LOCAL_GRADINGS), (text, grading) => {
        const grade = gradeAnswer(text, grading);
        expect(['correct', 'incorrect', 'unreadable']).toContain(grade.verdict);
        expect(grade.grader).toBe(grading.grader.type);
        if (grade.verdict === 'unreadable') {
          expect(typeof grade.reason).toBe('string');
          expect(grade.extracted).toBeUndefined();
        } else expect((grade.extracted ?? '').length).toBeLessThanOrEqual(501);
      }),
      { numRuns: RUNS },
    );
  });

  it('an empty or whitespace-only reply is unreadable for every grader but never incorrect', () => {
    const blank = fc
      .array(fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\u3000'), { maxLength: 50 })
      .map((a) => a.join(''));
    fc.assert(
      fc.property(blank, fc.constantFrom(...LOCAL_GRADINGS), (text, grading) => {
        expect(gradeAnswer(text, grading).verdict).toBe('unreadable');
      }),
      { numRuns: RUNS },
    );
  });

  it('a reply whose final answer line states the expected value is graded correct', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e9, max: 1e9, noNaN: true }), asciiText, (value, noise) => {
        const expected = Number(value.toPrecision(12));
        const text = `${noise.replace(/final/gi, '')}\nFINAL ANSWER: ${expected}`;
        expect(gradeAnswer(text, { expected, grader: { type: 'numeric' } }).verdict).toBe('correct');
      }),
      { numRuns: RUNS },
    );
  });

  it('normalization is idempotent, trimmed, with single spaces', () => {
    fc.assert(
      fc.property(fc.oneof(unicodeText, asciiText, controlText, utf16Text), (text) => {
        const once = normalizeText(text);
        expect(normalizeText(once)).toBe(once);
        expect(once).toBe(once.trim());
        expect(once).not.toMatch(/\s\s/);
      }),
      { numRuns: RUNS },
    );
  });

  it('every number read is finite and its text is a piece of the input', () => {
    fc.assert(
      fc.property(reply, (text) => {
        const normalized = text.normalize('NFKC');
        for (const token of readNumbers(text)) {
          expect(Number.isFinite(token.value)).toBe(true);
          expect(normalized.slice(token.start, token.end)).toBe(token.text);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('a choice read is always one of the options', () => {
    fc.assert(
      fc.property(reply, fc.integer({ min: 2, max: 26 }), (text, count) => {
        const options = Array.from({ length: count }, (_, i) => `option ${i}`);
        const read = readChoice(text, options);
        if (read.letter !== null) expect(read.letter.charCodeAt(0) - 65).toBeLessThan(count);
      }),
      { numRuns: RUNS },
    );
  });

  it('parseModelVerdict and finalAnswerLine take any text', () => {
    fc.assert(
      fc.property(reply, (text) => {
        expect(['correct', 'incorrect', 'unreadable']).toContain(parseModelVerdict(text).verdict);
        const line = finalAnswerLine(text);
        if (line !== null) expect(line.length).toBeGreaterThan(0);
      }),
      { numRuns: RUNS },
    );
  });

  it('checkGrading never throws, whatever the fields hold', () => {
    const value = fc.oneof(fc.anything(), reply, numberText);
    const grader = fc.oneof(
      fc.anything(),
      fc.record(
        {
          type: fc.constantFrom('exact', 'normalized', 'contains', 'choice', 'numeric', 'regex', 'model'),
          pattern: asciiText,
          options: fc.anything(),
          judges: fc.anything(),
          group: fc.anything(),
        },
        { requiredKeys: ['type'] },
      ),
    );
    fc.assert(
      fc.property(value, grader, (expected, g) => {
        const check = checkGrading({ expected, grader: g });
        if (!check.ok) expect(Object.keys(check.fields).length).toBeGreaterThan(0);
      }),
      { numRuns: RUNS },
    );
  });

  it('any pattern the guard accepts runs within its bounds on hostile text', () => {
    const patterns = fc.oneof(
      asciiText.map((s) => s.slice(0, 40)),
      fc
        .array(fc.constantFrom('a', '\\s', '.', '*', '+', '?', '(', ')', '|', '[a-z]', '{2,}', '\\d', 'x'), {
          maxLength: 12,
        })
        .map((p) => p.join('')),
    );
    fc.assert(
      fc.property(
        patterns,
        fc.oneof(reply, fc.constantFrom(' '.repeat(5000), 'a'.repeat(5000), `${'a'.repeat(3000)}!`)),
        (pattern, text) => {
          if (regexSafetyProblem(pattern) !== null) return;
          const grading: Grading = { expected: null, grader: { type: 'regex', pattern } };
          const started = Date.now();
          const grade = gradeAnswer(text, grading as LocalGrading);
          expect(['correct', 'incorrect', 'unreadable']).toContain(grade.verdict);
          expect(Date.now() - started).toBeLessThan(3000);
        },
      ),
      { numRuns: Math.min(RUNS, 150) },
    );
  });

  it('an accepted pattern finds its last match in short text of any kind, flags u or none, without running out of time', () => {
    const patterns = fc
      .array(fc.constantFrom('a', 'x*', '\\s', '.', '?', '[a-z]', '\\d+', '|', '(?:b)', '^', '$'), {
        minLength: 1,
        maxLength: 6,
      })
      .map((p) => p.join(''));
    fc.assert(
      fc.property(
        patterns,
        fc.constantFrom('', 'u', 'i', 'imsu'),
        fc.oneof(unicodeText, utf16Text, asciiText),
        (pattern, flags, text) => {
          if (regexSafetyProblem(pattern, flags) !== null) return;
          const run = lastMatchBounded(pattern, flags, text);
          expect(run.ok).toBe(true);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('stays linear on very long replies', () => {
    const huge = [
      ' '.repeat(1_000_000),
      '9'.repeat(200_000),
      `${'1,'.repeat(100_000)}5`,
      `FINAL ANSWER:${' '.repeat(500_000)}x`,
      `${'*'.repeat(300_000)}FINAL ANSWER: 3`,
      'answer '.repeat(100_000),
      `VERDICT:${'.'.repeat(300_000)}`,
      `${'$'.repeat(200_000)}3${'$'.repeat(200_000)}`,
    ];
    const started = Date.now();
    for (const text of huge) {
      for (const grading of LOCAL_GRADINGS) gradeAnswer(text, grading);
      parseModelVerdict(text);
    }
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});

import type { Grade, Grading, GraderSpec, ModelGraderSpec } from '@conclave/contracts';
import { readChoice } from './choice';
import { lastNumber } from './numbers';
import { lastMatchBounded } from './regex-guard';
import { extractAnswerText, finalAnswerLine, normalizeText } from './text';

/** Every grader but the model grader: a pure function of the answer's text. */
export type LocalGraderSpec = Exclude<GraderSpec, ModelGraderSpec>;
export type LocalGrading = Grading & { grader: LocalGraderSpec };

export const isLocalGrading = (grading: Grading): grading is LocalGrading => grading.grader.type !== 'model';

/** How much of an extracted answer a grade keeps (`Grade.extracted`). */
export const EXTRACTED_MAX = 500;

const clip = (text: string): string =>
  text.length > EXTRACTED_MAX ? `${text.slice(0, EXTRACTED_MAX)}…` : text;
const quoted = (text: string): string => JSON.stringify(clip(text));

/** Whole-word containment: `needle`'s words appear together, in order, among `haystack`'s. */
function containsWords(haystack: string, needle: string): boolean {
  return ` ${haystack.split(/\s+/).join(' ')} `.includes(` ${needle.split(/\s+/).join(' ')} `);
}

/**
 * An answer's grade against the expected answer (a `Grading` as validation stored it). Text the
 * grader cannot read (no number, no choice letter, no `FINAL ANSWER:` line where one is required,
 * nothing captured, an empty reply) is `unreadable`, never `incorrect`.
 */
export function gradeAnswer(reply: string, { expected, grader }: LocalGrading): Grade {
  const unreadable = (reason: string): Grade => ({ verdict: 'unreadable', reason, grader: grader.type });
  const verdict = (ok: boolean, extracted: string, reason: string): Grade => ({
    verdict: ok ? 'correct' : 'incorrect',
    extracted: clip(extracted),
    reason,
    grader: grader.type,
  });
  const expectedText = expected === null ? '' : String(expected);
  switch (grader.type) {
    case 'exact': {
      const read = extractAnswerText(reply, grader.extract ?? 'auto');
      if (read.text === null) return unreadable(read.reason);
      const ok = read.text.trim() === expectedText.trim();
      return verdict(
        ok,
        read.text,
        `${quoted(read.text)} ${ok ? 'equals' : 'differs from'} ${quoted(expectedText)}`,
      );
    }
    case 'normalized': {
      const read = extractAnswerText(reply, grader.extract ?? 'auto');
      if (read.text === null) return unreadable(read.reason);
      const answer = normalizeText(read.text);
      if (answer === '') return unreadable('the answer is only punctuation or whitespace');
      const ok = answer === normalizeText(expectedText);
      return verdict(
        ok,
        read.text,
        `normalized, ${quoted(answer)} ${ok ? 'equals' : 'differs from'} ${quoted(normalizeText(expectedText))}`,
      );
    }
    case 'contains': {
      const read = extractAnswerText(reply, grader.extract ?? 'auto');
      if (read.text === null) return unreadable(read.reason);
      const sensitive = grader.caseSensitive === true;
      const answer = normalizeText(read.text, sensitive);
      if (answer === '') return unreadable('the answer is only punctuation or whitespace');
      const needle = normalizeText(expectedText, sensitive);
      const ok = containsWords(answer, needle);
      return verdict(
        ok,
        read.text,
        `${ok ? 'contains' : 'does not contain'} ${quoted(needle)} as whole words`,
      );
    }
    case 'choice': {
      const read = readChoice(reply, grader.options);
      if (read.letter === null) return unreadable(read.reason);
      const ok = read.letter === expectedText;
      return verdict(ok, read.letter, `${read.from} chooses ${read.letter}; expected ${expectedText}`);
    }
    case 'numeric': {
      const how = grader.extract ?? 'auto';
      const line = how === 'last-number' ? null : finalAnswerLine(reply);
      if (how === 'final-answer' && line === null) return unreadable('the reply has no FINAL ANSWER: line');
      const token = lastNumber(line ?? reply);
      if (token === null)
        return unreadable(line !== null ? 'the FINAL ANSWER: line has no number' : 'the reply has no number');
      const target = typeof expected === 'number' ? expected : Number(expected);
      const allowed = Math.max(
        grader.absoluteTolerance ?? 0,
        (grader.relativeTolerance ?? 0) * Math.abs(target),
      );
      const difference = Math.abs(token.value - target);
      const ok = difference <= allowed;
      return verdict(
        ok,
        String(token.value),
        `read ${token.text}${token.text === String(token.value) ? '' : ` (${token.value})`} from ${line !== null ? 'the FINAL ANSWER: line' : 'the reply'}; expected ${target}` +
          (allowed > 0 ? ` ± ${allowed}` : '') +
          (ok ? '' : `, off by ${difference}`),
      );
    }
    case 'regex': {
      const read = extractAnswerText(reply, grader.extract ?? 'auto');
      if (read.text === null) return unreadable(read.reason);
      const run = lastMatchBounded(grader.pattern, grader.flags ?? '', read.text);
      if (!run.ok) return unreadable(run.reason);
      const { match } = run;
      if (grader.group === undefined) {
        return match === null
          ? verdict(false, read.text, 'the pattern does not match the answer')
          : verdict(true, match[0], `the pattern matches ${quoted(match[0])}`);
      }
      if (match === null) return unreadable('the pattern does not match the answer, so nothing was captured');
      const captured = typeof grader.group === 'number' ? match[grader.group] : match.groups?.[grader.group];
      if (captured === undefined) return unreadable(`group ${grader.group} took no part in the match`);
      const answer = normalizeText(captured);
      if (answer === '') return unreadable(`group ${grader.group} captured only punctuation or whitespace`);
      const ok = answer === normalizeText(expectedText);
      return verdict(
        ok,
        captured,
        `captured ${quoted(captured)}, ${ok ? 'equal to' : 'not'} ${quoted(expectedText)} once normalized`,
      );
    }
  }
}

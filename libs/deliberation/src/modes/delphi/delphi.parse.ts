import { collapseSpaces } from '../../shared/text';
import type { Confidence, DelphiClassification, QuestionType } from '@conclave/contracts';

const SCALES: Record<string, number> = {
  k: 1e3,
  thousand: 1e3,
  m: 1e6,
  mm: 1e6,
  mn: 1e6,
  million: 1e6,
  millions: 1e6,
  b: 1e9,
  bn: 1e9,
  billion: 1e9,
  billions: 1e9,
  t: 1e12,
  tn: 1e12,
  trillion: 1e12,
};

// -1,234.5e3 million | $3.2B | 42,000,000 | 4.2e7 | −12
// Applied to text with spaces collapsed; each optional space is followed by a required token.
const NUMBER =
  /([-−–]?) ?(?:[$€£¥] ?)?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)(?: ?(thousand|millions?|billions?|trillion|mm|mn|bn|tn|[kmbt]))?\b/i;

/** A number as people and models write it; null when there is none. */
export function parseNumber(text: string): number | null {
  const match = NUMBER.exec(collapseSpaces(text));
  if (!match) return null;
  const [, sign, digits, scaleWord] = match;
  const value = Number(digits.replace(/,/g, '')) * (scaleWord ? SCALES[scaleWord.toLowerCase()] : 1);
  if (!Number.isFinite(value)) return null;
  return sign ? -value : value;
}

/**
 * The value of the panelist's `NAME:` line. When the line appears several times the last one wins:
 * a panelist that quotes "ESTIMATE: 1" (from the question, or someone's claim) and then gives its
 * own `ESTIMATE:` is read by its own.
 */
const field = (text: string, name: string): string | null => {
  const pattern = new RegExp(
    String.raw`^[ \t>*_#-]*${name}[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?(.+)$`,
    'gim',
  );
  const match = [...text.matchAll(pattern)].at(-1);
  return match ? match[1].replace(/\*\*$/, '').trim() : null;
};

export function parseConfidence(text: string): { confidence: Confidence; parsed: boolean } {
  const value = field(text, 'CONFIDENCE')
    ?.toUpperCase()
    .match(/\b(LOW|MEDIUM|HIGH)\b/)?.[1] as Confidence | undefined;
  return value ? { confidence: value, parsed: true } : { confidence: 'MEDIUM', parsed: false };
}

const REASONING_LINE = /^[ \t>*_#-]*REASONING[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?/gim;

/** Everything after the last `REASONING:` line start (the field ends the format); else the whole text. */
export function parseReasoning(text: string): string {
  const match = [...text.matchAll(REASONING_LINE)].at(-1);
  return (match ? text.slice(match.index + match[0].length) : text).trim();
}

/**
 * The number on the last `ESTIMATE:` line; without that line (or without a number on it), the
 * first number anywhere (05-delphi.md §F).
 */
export function parseEstimate(text: string): { estimate: number | null; fromLine: boolean } {
  const line = field(text, 'ESTIMATE');
  const fromLine = line === null ? null : parseNumber(line);
  if (fromLine !== null) return { estimate: fromLine, fromLine: true };
  return { estimate: parseNumber(text), fromLine: false };
}

const normalize = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/**
 * The option an answer names, by number (`ANSWER: 2`, `Option 2`) or by name, ignoring case and
 * punctuation; any other answer is kept as its own category.
 */
export function matchOption(answer: string, options: readonly string[] | null): string {
  const trimmed = answer
    .trim()
    .replace(/^["'*_]+|["'*_.]+$/g, '')
    .trim();
  if (!options || options.length === 0) return trimmed;
  const byNumber = /^(?:option\s*)?#?(\d+)(?:[.):\s]|$)/i.exec(trimmed);
  if (byNumber) {
    const index = Number(byNumber[1]) - 1;
    if (index >= 0 && index < options.length) return options[index];
  }
  const wanted = normalize(trimmed);
  const exact = options.find((o) => normalize(o) === wanted);
  if (exact) return exact;
  // "TypeScript — it has the best ecosystem": the longest option the answer starts with.
  const prefix = [...options]
    .sort((a, b) => b.length - a.length)
    .find((o) => normalize(o).length > 0 && wanted.startsWith(normalize(o)));
  return prefix ?? trimmed;
}

export function parseAnswer(text: string, options: readonly string[] | null): string | null {
  const line = field(text, 'ANSWER');
  if (!line) return null;
  const answer = matchOption(line, options);
  return answer.length > 0 ? answer : null;
}

/** TYPE / OPTIONS / REASONING; null when no type could be read. */
export function parseClassification(text: string): DelphiClassification | null {
  const type = field(text, 'TYPE')
    ?.toUpperCase()
    .match(/\b(NUMERIC|QUALITATIVE)\b/)?.[1];
  if (!type) return null;
  const rawOptions = field(text, 'OPTIONS');
  const options =
    type === 'QUALITATIVE' && rawOptions && !/^n\/?a$/i.test(rawOptions)
      ? rawOptions
          .replace(/^\[|\]$/g, '')
          .split(/\s*,\s*|\s*;\s*/)
          .map((o) => o.replace(/^["']|["']$/g, '').trim())
          .filter(Boolean)
      : null;
  return {
    type: type.toLowerCase() as QuestionType,
    options: options && options.length > 0 ? options : null,
    reasoning: field(text, 'REASONING') ?? '',
  };
}

import { DIMENSIONS, type Dimension, type DimensionScores, type Verdict } from '@conclave/contracts';

const NUMBER = String.raw`(-?\d+(?:\.\d+)?)`;
const OUT_OF_TEN = String.raw`(?:\s*\/\s*10)?`;

const emptyScores = (): DimensionScores => ({
  accuracy: null,
  completeness: null,
  clarity: null,
  relevance: null,
  actionability: null,
});

/** A 1-10 score from what a model wrote: rounded, null when out of range. */
function toScore(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const value = Math.round(Number(raw));
  return Number.isFinite(value) && value >= 1 && value <= 10 ? value : null;
}

function tableRow(dimension: Dimension): RegExp {
  // | **Accuracy** | **8**/10 | ...   (outer pipes optional)
  return new RegExp(
    String.raw`^[ \t]*\|?[ \t]*\**[ \t]*${dimension}[ \t]*\**[ \t]*\|[ \t]*\**[ \t]*${NUMBER}[ \t]*\**${OUT_OF_TEN}[ \t]*\**[ \t]*(?:\||$)`,
    'im',
  );
}

function inline(dimension: Dimension): RegExp {
  // Accuracy: 8 | **Accuracy**: 8/10 | **Accuracy:** 8 | Accuracy — 8 | 1. **Accuracy** - 7/10
  return new RegExp(
    String.raw`\b${dimension}[ \t]*\**[ \t]*[:—–-][ \t]*\**[ \t]*${NUMBER}[ \t]*\**${OUT_OF_TEN}`,
    'i',
  );
}

export function parseScores(text: string): DimensionScores {
  const scores = emptyScores();
  for (const dimension of DIMENSIONS) {
    const fromTable = toScore(tableRow(dimension).exec(text)?.[1]);
    scores[dimension] = fromTable ?? toScore(inline(dimension).exec(text)?.[1]);
  }
  return scores;
}

const VERDICT_LINE = /VERDICT[ \t]*\**[ \t]*[:：][ \t]*\**[ \t]*(APPROVE|REVISE|REJECT)\b/gi;

/** The last `VERDICT: X` (a juror's own verdict closes its answer); else a keyword near the end. */
export function parseVerdict(text: string): Verdict | null {
  const matches = [...text.matchAll(VERDICT_LINE)];
  if (matches.length > 0) return matches[matches.length - 1][1].toUpperCase() as Verdict;
  const tail = text.slice(-500);
  if (/\bAPPROVE\b/i.test(tail)) return 'APPROVE';
  if (/\bREJECT\b/i.test(tail)) return 'REJECT';
  if (/\bREVISE\b/i.test(tail)) return 'REVISE';
  return null;
}

export function calculateAverage(scores: DimensionScores): number | null {
  const values = Object.values(scores).filter((v): v is number => v !== null);
  if (values.length === 0) return null;
  return Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 10) / 10;
}

const HEADING = /^[ \t]*(?:#{1,6}[ \t]+.*|\*\*[^*\n]+\*\*[ \t]*:?[ \t]*)$/;
const LIST_ITEM = /^[ \t]*(?:\d+[.)]|[-*•])[ \t]+(.+)$/;

/** The lines under the first heading that matches, up to the next heading. */
export function section(text: string, heading: RegExp): string[] | null {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => HEADING.test(line) && heading.test(line));
  if (start < 0) return null;
  const body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (HEADING.test(line)) break;
    body.push(line);
  }
  return body;
}

const stripEmphasis = (item: string) => item.replace(/^\*\*(.+?)\*\*$/, '$1').trim();

/** Items of a numbered or bulleted list. */
export function listItems(lines: string[]): string[] {
  return lines
    .map((line) => LIST_ITEM.exec(line)?.[1])
    .filter((item): item is string => item !== undefined)
    .map(stripEmphasis)
    .filter((item) => item.length > 0);
}

export function parseRecommendations(text: string): string[] {
  const lines = section(text, /recommendation/i);
  return lines ? listItems(lines) : [];
}

/** Only lines the parsers could read matter; other echoed lines (headings, prose) are kept. */
const PARSED_WORDS = new RegExp(`verdict|approve|revise|reject|${DIMENSIONS.join('|')}`, 'i');

const normalize = (line: string) =>
  line
    .replace(/^[ \t>]+/, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();

/**
 * The content under evaluation is data: a juror that quotes it must not have the content's own
 * `VERDICT:` lines or score rows read as its verdict or scores. Lines of the answer that repeat
 * a line of the content verbatim (blockquoted or not) are dropped before parsing.
 */
export function stripEchoedContent(text: string, content: string): string {
  const contentLines = new Set(
    content
      .split('\n')
      .map(normalize)
      .filter((line) => line.length >= 3),
  );
  if (contentLines.size === 0) return text;
  return text
    .split('\n')
    .filter((line) => !(PARSED_WORDS.test(line) && contentLines.has(normalize(line))))
    .join('\n');
}

export interface ParsedJurorOutput {
  scores: DimensionScores;
  average: number | null;
  verdict: Verdict | null;
  recommendations: string[];
  parseSuccess: boolean;
}

export function parseJurorOutput(text: string, content: string): ParsedJurorOutput {
  const own = stripEchoedContent(text, content);
  const scores = parseScores(own);
  const verdict = parseVerdict(own);
  return {
    scores,
    average: calculateAverage(scores),
    verdict,
    recommendations: parseRecommendations(own),
    parseSuccess: Object.values(scores).every((s) => s !== null) && verdict !== null,
  };
}

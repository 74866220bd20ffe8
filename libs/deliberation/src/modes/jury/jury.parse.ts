import { DIMENSIONS, type Dimension, type DimensionScores, type Verdict } from '@conclave/contracts';
import { collapseSpaces } from '../../shared/text';
import { contentLineSet, isEcho, listItems, normalizeLine, ownLines, sections } from './jury.markdown';

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

/** `Accuracy`, `**Accuracy**`, `1. Accuracy`, `Accuracy (facts)` name the dimension. */
function namesDimension(cell: string, dimension: Dimension): boolean {
  const bare = cell
    .replace(/\*\*/g, '')
    .replace(/^ ?\d+[.)] ?/, '')
    .trim()
    .toLowerCase();
  return (
    bare === dimension ||
    new RegExp(`^${dimension}\\b(?! ?[a-z])`).test(bare) ||
    bare.startsWith(`${dimension} (`)
  );
}

const SCORE_CELL = /^\**(-?\d+(?:\.\d+)?)\** ?(?:\/ ?10)?\**(?: ?\(.*\))?$/;

type Found = { found: true; score: number | null } | { found: false };

/** A table row naming the dimension, scored by the first number cell after that name. */
function fromTable(lines: readonly string[], dimension: Dimension): Found {
  for (const line of lines) {
    if (!line.includes('|')) continue;
    const cells = line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((c) => c.trim());
    const at = cells.findIndex((c) => namesDimension(c, dimension));
    if (at < 0) continue;
    const score = cells
      .slice(at + 1)
      .map((c) => SCORE_CELL.exec(c)?.[1])
      .find((v) => v !== undefined);
    if (score !== undefined) return { found: true, score: toScore(score) };
  }
  return { found: false };
}

const NUMBER = String.raw`(-?\d+(?:\.\d+)?)`;

/** `Accuracy: 8`, `**Accuracy**: 8/10`, `- Accuracy — 7`, `1. **Accuracy (8/10)**`, `Accuracy 8/10`, at line start. */
function fromInline(lines: readonly string[], dimension: Dimension): Found {
  const atStart = new RegExp(
    String.raw`^ ?(?:[-*•] |\d+[.)] |#{1,6} )?\** ?${dimension}\b ?\** ?(?:[:—–(-]|(?= ?\d)) ?\** ?${NUMBER}`,
    'i',
  );
  for (const line of lines) {
    const match = atStart.exec(line);
    if (match) return { found: true, score: toScore(match[1]) };
  }
  // ### Accuracy \n Score: 8/10
  for (let i = 0; i < lines.length - 1; i++) {
    if (!new RegExp(String.raw`^ ?#{1,6} ?\** ?${dimension}\b`, 'i').test(lines[i])) continue;
    const next = lines.slice(i + 1).find((l) => l.trim().length > 0) ?? '';
    const score = new RegExp(String.raw`^ ?\** ?score\** ?[:—–-]? ?\** ?${NUMBER}`, 'i').exec(next);
    if (score) return { found: true, score: toScore(score[1]) };
  }
  // The spec's own fallback, anywhere in a line: "… Accuracy – 3/10."
  const anywhere = new RegExp(String.raw`\b${dimension} ?\** ?[:—–-]+ ?\** ?${NUMBER}`, 'i');
  for (const line of lines) {
    const match = anywhere.exec(line);
    if (match) return { found: true, score: toScore(match[1]) };
  }
  return { found: false };
}

/**
 * The five scores. The juror's own Scores section is read first; a dimension found in a table
 * but out of range is null (03-jury.md §F), not looked for again in prose.
 */
export function parseScores(text: string, content = ''): DimensionScores {
  const lines = ownLines(text);
  const echoes = contentLineSet(content);
  const scoreSections = sections(lines, /scores?/i).filter((s) => !isEcho(s, echoes));
  const notEchoed = lines.filter((line) => !echoes.has(normalizeLine(line)));
  const scopes = [...scoreSections.map((s) => s.body), notEchoed];
  const scores = emptyScores();
  for (const dimension of DIMENSIONS) {
    for (const scope of scopes) {
      const found = fromTable(scope, dimension);
      const result = found.found ? found : fromInline(scope, dimension);
      if (result.found) {
        scores[dimension] = result.score;
        break;
      }
    }
  }
  return scores;
}

const VERDICT_WORD = /\b(APPROVE|REVISE|REJECT)\b/i;
const VERDICT_LINE = /^ ?[#*]*\** ?VERDICT ?\** ?[:—–-] ?\** ?\[? ?(APPROVE|REVISE|REJECT)\b/i;

/**
 * The juror's verdict: the one in its own Verdict section; else its last line-start `VERDICT:`;
 * else, as 03-jury.md's fallback, APPROVE, REJECT or REVISE in the last 500 characters.
 * Quoted lines and lines repeated from the content under evaluation are not the juror's.
 */
export function parseVerdict(text: string, content = ''): Verdict | null {
  const lines = ownLines(text);
  const echoes = contentLineSet(content);
  const own = sections(lines, /verdict/i).filter((s) => !isEcho(s, echoes));
  const section = own.at(-1);
  if (section) {
    const inHeading = VERDICT_WORD.exec(section.heading.replace(/verdict/i, ''))?.[1];
    const stated = section.body
      .map((l) => VERDICT_LINE.exec(l)?.[1] ?? VERDICT_WORD.exec(l)?.[1])
      .find(Boolean);
    const verdict = inHeading ?? stated;
    if (verdict) return verdict.toUpperCase() as Verdict;
  }
  const notEchoed = lines.filter((line) => !echoes.has(normalizeLine(line)));
  const lineVerdict = notEchoed
    .map((l) => VERDICT_LINE.exec(l)?.[1])
    .filter(Boolean)
    .at(-1);
  if (lineVerdict) return lineVerdict.toUpperCase() as Verdict;
  const tail = notEchoed.join('\n').slice(-500);
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

export function parseRecommendations(text: string, content = ''): string[] {
  const echoes = contentLineSet(content);
  const own = sections(ownLines(text), /recommendations?/i).filter((s) => !isEcho(s, echoes));
  return own.length > 0 ? listItems(own[own.length - 1].body) : [];
}

export interface ParsedJurorOutput {
  scores: DimensionScores;
  average: number | null;
  verdict: Verdict | null;
  recommendations: string[];
  parseSuccess: boolean;
}

export function parseJurorOutput(text: string, content: string): ParsedJurorOutput {
  const scores = parseScores(text, content);
  const verdict = parseVerdict(text, content);
  return {
    scores,
    average: calculateAverage(scores),
    verdict,
    recommendations: parseRecommendations(text, content),
    parseSuccess: Object.values(scores).every((s) => s !== null) && verdict !== null,
  };
}

export { collapseSpaces };

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

/** The last table row naming the dimension, scored by the first number cell after that name. */
function fromTable(lines: readonly string[], dimension: Dimension): Found {
  for (const line of [...lines].reverse()) {
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

/**
 * `Accuracy: 8`, `**Accuracy**: 8/10`, `- Accuracy — 7`, `1. **Accuracy (8/10)**`, `Accuracy 8/10`, at
 * line start; then `### Accuracy` with `Score: 8/10` below; then the dimension anywhere in a line.
 * At each step the last such line wins, as the juror's own final word.
 */
function fromInline(lines: readonly string[], dimension: Dimension): Found {
  const atStart = new RegExp(
    String.raw`^ ?(?:[-*•] |\d+[.)] |#{1,6} )?\** ?${dimension}\b ?\** ?(?:[:—–(-]|(?= ?\d)) ?\** ?${NUMBER}`,
    'i',
  );
  for (const line of [...lines].reverse()) {
    const match = atStart.exec(line);
    if (match) return { found: true, score: toScore(match[1]) };
  }
  // ### Accuracy \n Score: 8/10
  const heading = new RegExp(String.raw`^ ?#{1,6} ?\** ?${dimension}\b`, 'i');
  const scoreLine = new RegExp(String.raw`^ ?\** ?score\** ?[:—–-]? ?\** ?${NUMBER}`, 'i');
  for (let i = lines.length - 2; i >= 0; i--) {
    if (!heading.test(lines[i])) continue;
    let next = i + 1;
    while (next < lines.length && lines[next].trim().length === 0) next++;
    const score = scoreLine.exec(lines[next] ?? '');
    if (score) return { found: true, score: toScore(score[1]) };
  }
  // The spec's own fallback, anywhere in a line: "… Accuracy – 3/10."
  const anywhere = new RegExp(String.raw`\b${dimension} ?\** ?[:—–-]+ ?\** ?${NUMBER}`, 'gi');
  for (const line of [...lines].reverse()) {
    const match = [...line.matchAll(anywhere)].at(-1);
    if (match) return { found: true, score: toScore(match[1]) };
  }
  return { found: false };
}

/**
 * The five scores. The juror's own Scores section is read first (its last one, when it wrote
 * several); a dimension found in a table but out of range is null (03-jury.md §F), not looked for
 * again in prose. Within a scope the last line that scores a dimension wins.
 */
export function parseScores(text: string, content = ''): DimensionScores {
  const lines = ownLines(text);
  const echoes = contentLineSet(content);
  const scoreSections = sections(lines, /scores?/i)
    .filter((s) => !isEcho(s, echoes))
    .reverse();
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
 * The juror's verdict: its last verdict statement, where a statement is a line-start `VERDICT: X`
 * (or `**Verdict** — X`, `### Verdict: X`), or, for a Verdict section without such a line, the
 * verdict in its heading or else the first verdict word under it. Failing all that, as 03-jury.md's
 * fallback, APPROVE, REJECT or REVISE in the last 500 characters.
 *
 * The last statement wins, so a juror that quotes a `VERDICT:` line before giving its own is read
 * by its own. Quoted lines (blockquotes, code blocks) are not the juror's, nor are lines repeated
 * from the content under evaluation — except in the juror's own Verdict section, when its own
 * verdict line happens to read exactly like one in the content.
 */
export function parseVerdict(text: string, content = ''): Verdict | null {
  const lines = ownLines(text);
  const echoes = contentLineSet(content);
  const echoed = (line: string) => echoes.has(normalizeLine(line));
  const statements: { at: number; verdict: string }[] = [];
  lines.forEach((line, at) => {
    const verdict = echoed(line) ? undefined : VERDICT_LINE.exec(line)?.[1];
    if (verdict) statements.push({ at, verdict });
  });
  for (const section of sections(lines, /verdict/i)) {
    if (isEcho(section, echoes)) continue;
    const body = section.body.map((line, i) => ({ line, at: section.at + 1 + i }));
    const stated = body.flatMap(({ line, at }) => {
      const verdict = VERDICT_LINE.exec(line)?.[1];
      return verdict ? [{ at, verdict, echoed: echoed(line) }] : [];
    });
    if (stated.some((s) => !s.echoed)) continue; // counted with the lines above
    const inHeading = VERDICT_WORD.exec(section.heading.replace(/verdict/i, ''))?.[1];
    const word = body
      .map(({ line, at }) => ({ at, verdict: VERDICT_WORD.exec(line)?.[1] }))
      .find((w) => w.verdict !== undefined);
    const statement =
      stated.at(-1) ??
      (inHeading ? { at: section.at, verdict: inHeading } : undefined) ??
      (word?.verdict ? { at: word.at, verdict: word.verdict } : undefined);
    if (statement) statements.push(statement);
  }
  const last = statements.reduce<{ at: number; verdict: string } | undefined>(
    (latest, s) => (latest === undefined || s.at >= latest.at ? s : latest),
    undefined,
  );
  if (last) return last.verdict.toUpperCase() as Verdict;
  const notEchoed = lines.filter((line) => !echoed(line));
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

export type RankingParseLevel = 0 | 1 | 2 | 3 | 4;

export interface ParsedRanking {
  labels: string[];
  /** Which fallback level produced the labels; 0 when none did. */
  level: RankingParseLevel;
}

const LABEL = /Response [A-Z]\b/g;
// Whitespace runs are followed by required tokens and stay within a line: no quadratic backtracking.
const NUMBERED_LABEL = /^[ \t]*\d+[ \t]*[.):-][ \t]*(?:\*+[ \t]*)?(Response [A-Z])\b/gm;
const HEADER = /FINAL RANKING\s*:/gi;

function unique(labels: string[], allowed: ReadonlySet<string>): string[] {
  const seen = new Set<string>();
  for (const label of labels) if (allowed.has(label)) seen.add(label);
  return [...seen];
}

const numbered = (text: string): string[] => [...text.matchAll(NUMBERED_LABEL)].map((m) => m[1]);
const mentioned = (text: string): string[] => text.match(LABEL) ?? [];

/**
 * An evaluator's ranking, best first, by the first of four levels that yields anything:
 * (1) the numbered list under `FINAL RANKING:`; (2) labels in order after `FINAL RANKING:`;
 * (3) a numbered list of labels anywhere; (4) every label in order of first mention.
 * Labels the evaluator was not shown are dropped at every level, and so are repeats.
 *
 * `FINAL RANKING:` is the evaluator's last such header: one it quotes earlier (from a response
 * under evaluation, or from the prompt's example) does not count.
 */
export function parseRanking(text: string, shownLabels: readonly string[]): ParsedRanking {
  const allowed = new Set(shownLabels);
  const header = [...text.matchAll(HEADER)].at(-1);
  const afterHeader = header ? text.slice(header.index + header[0].length) : null;
  const levels: [RankingParseLevel, () => string[]][] = [
    [1, () => (afterHeader === null ? [] : numbered(afterHeader))],
    [2, () => (afterHeader === null ? [] : mentioned(afterHeader))],
    [3, () => numbered(text)],
    [4, () => mentioned(text)],
  ];
  for (const [level, extract] of levels) {
    const labels = unique(extract(), allowed);
    if (labels.length > 0) return { labels, level };
  }
  return { labels: [], level: 0 };
}

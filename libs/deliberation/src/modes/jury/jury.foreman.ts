import {
  DIMENSIONS,
  type DimensionAnalysisRow,
  type ForemanReport,
  type JurorSummary,
  type Verdict,
} from '@conclave/contracts';
import { contentLineSet, isEcho, listItems, ownLines, sections, type Section } from './jury.markdown';

const VERDICT_WORD = /\b(APPROVE|REVISE|REJECT)\b/i;

const title = (dimension: string) => dimension.charAt(0).toUpperCase() + dimension.slice(1);

const cellsOf = (line: string): string[] =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.replace(/\*\*/g, '').trim());

const isConsensusHeader = (line: string) =>
  line.includes('|') && cellsOf(line).some((c) => /^consensus$/i.test(c));

/**
 * The foreman's Consensus column, by dimension, read from the table under that header only: the
 * last such table, when the report quotes another (from the content) before its own.
 */
export function consensusNotes(text: string): Record<string, string> {
  const lines = ownLines(text);
  const notes: Record<string, string> = {};
  const headerAt = lines.findLastIndex(isConsensusHeader);
  if (headerAt < 0) return notes;
  const column = cellsOf(lines[headerAt]).findIndex((c) => /^consensus$/i.test(c));
  for (const line of lines.slice(headerAt + 1)) {
    if (!line.includes('|')) break;
    const cells = cellsOf(line);
    const dimension = DIMENSIONS.find((d) => cells[0]?.toLowerCase().replace(/^\d+[.)] ?/, '') === d);
    const note = cells[column];
    if (dimension && note) notes[title(dimension)] = note;
  }
  return notes;
}

/** When the foreman gave no note: how far apart the jurors' scores are. */
export function consensusFromRange(min: number, max: number): string {
  const spread = max - min;
  if (spread <= 1) return 'Strong agreement';
  if (spread <= 2) return 'Mixed';
  return 'Disagreement';
}

const lastOwn = (all: Section[], echoes: ReadonlySet<string>) => all.filter((s) => !isEcho(s, echoes)).at(-1);

function items(section: Section | undefined): string[] {
  if (!section) return [];
  const list = listItems(section.body);
  if (list.length > 0) return list;
  const paragraph = section.body.join(' ').replace(/\s+/g, ' ').trim();
  return paragraph && !/^(none|n\/a|not applicable)\b/i.test(paragraph) ? [paragraph] : [];
}

const NO_DISSENT =
  /^(none|n\/a|not applicable|no dissent(ing opinions?)?|no juror dissented|there (were|was) no dissent(ing opinions?)?|(the )?jury (was|is) unanimous)\b[^.]*\.?$/i;

const VERDICT_LINE = /^ ?[#*]*\** ?(?:final )?verdict ?\** ?[:—–-] ?\** ?\[? ?(APPROVE|REVISE|REJECT)\b/i;

/**
 * The verdict the foreman states under its Final Verdict heading, or null: the heading's, unless
 * the section has `Verdict: X` lines, of which the last wins; else the first verdict word under it.
 */
function statedVerdict(section: Section | undefined): Verdict | null {
  if (!section) return null;
  const heading = section.heading.replace(/final verdict/i, '');
  const word =
    section.body
      .map((l) => VERDICT_LINE.exec(l)?.[1])
      .filter(Boolean)
      .at(-1) ??
    VERDICT_WORD.exec(heading)?.[1] ??
    section.body.map((l) => VERDICT_WORD.exec(l)?.[1]).find(Boolean);
  return word ? (word.toUpperCase() as Verdict) : null;
}

/**
 * The foreman's report as `ForemanReport`. The figures of the dimension analysis come from the
 * server's aggregation of the juror scores, never from the foreman's arithmetic; only the
 * consensus wording is the foreman's. Without a stated final verdict, the jury's majority stands.
 */
export function parseForemanReport(input: {
  model: string;
  text: string;
  content: string;
  summary: JurorSummary;
  responseTimeMs: number;
}): ForemanReport {
  const lines = ownLines(input.text);
  const echoes = contentLineSet(input.content);
  const notes = consensusNotes(input.text);
  const dimensionAnalysis: DimensionAnalysisRow[] = [];
  for (const dimension of DIMENSIONS) {
    const avg = input.summary.dimensionAverages[dimension];
    const { min, max } = input.summary.dimensionRanges[dimension];
    if (avg === null || min === null || max === null) continue;
    dimensionAnalysis.push({
      dimension: title(dimension),
      avgScore: avg,
      minScore: min,
      maxScore: max,
      consensus: notes[title(dimension)] ?? consensusFromRange(min, max),
    });
  }
  const dissentSection = lastOwn(sections(lines, /dissent/i), echoes);
  const dissentText = dissentSection?.body.join(' ').replace(/\s+/g, ' ').trim() ?? '';
  return {
    model: input.model,
    reportText: input.text,
    finalVerdict:
      statedVerdict(lastOwn(sections(lines, /final verdict/i), echoes)) ?? input.summary.majorityVerdict,
    dimensionAnalysis,
    keyStrengths: items(lastOwn(sections(lines, /strength/i), echoes)),
    keyWeaknesses: items(lastOwn(sections(lines, /weakness/i), echoes)),
    recommendations: items(lastOwn(sections(lines, /recommendation/i), echoes)),
    dissentingOpinions: NO_DISSENT.test(dissentText) ? [] : items(dissentSection),
    responseTimeMs: input.responseTimeMs,
  };
}

import {
  DIMENSIONS,
  type DimensionAnalysisRow,
  type ForemanReport,
  type JurorSummary,
  type Verdict,
} from '@conclave/contracts';
import { listItems, parseVerdict, section, stripEchoedContent } from './jury.parse';

const FINAL_VERDICT =
  /Final Verdict[ \t]*\**[ \t]*:?[ \t]*\**[ \t]*\n?[ \t]*\**[ \t]*(APPROVE|REVISE|REJECT)\b/i;

const title = (dimension: string) => dimension.charAt(0).toUpperCase() + dimension.slice(1);

const cellsOf = (line: string): string[] => {
  const cells = line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|');
  return cells.map((c) => c.replace(/\*\*/g, '').trim());
};

/** The foreman's Consensus column, by dimension, from its analysis table if it wrote one. */
export function consensusNotes(text: string): Record<string, string> {
  const lines = text.split('\n');
  const header = lines.find((line) => line.includes('|') && /\bconsensus\b/i.test(line));
  const column = header ? cellsOf(header).findIndex((c) => /^consensus$/i.test(c)) : -1;
  const notes: Record<string, string> = {};
  if (column <= 0) return notes;
  for (const dimension of DIMENSIONS) {
    const row = lines.find((line) =>
      new RegExp(String.raw`^[ \t]*\|?[ \t]*\**[ \t]*${dimension}[ \t]*\**[ \t]*\|`, 'i').test(line),
    );
    if (!row) continue;
    const cells = cellsOf(row);
    const note = cells[column];
    if (note) notes[title(dimension)] = note;
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

function items(text: string, heading: RegExp): string[] {
  const lines = section(text, heading);
  if (!lines) return [];
  const list = listItems(lines);
  if (list.length > 0) return list;
  const paragraph = lines.join(' ').replace(/\s+/g, ' ').trim();
  return paragraph ? [paragraph] : [];
}

/**
 * The foreman's report as `ForemanReport`. The figures of the dimension analysis come from the
 * server's aggregation of the juror scores, never from the foreman's arithmetic; only the
 * consensus wording is the foreman's.
 */
export function parseForemanReport(input: {
  model: string;
  text: string;
  content: string;
  summary: JurorSummary;
  responseTimeMs: number;
}): ForemanReport {
  const own = stripEchoedContent(input.text, input.content);
  const notes = consensusNotes(own);
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
  const dissent = items(own, /dissent/i);
  const verdict = (FINAL_VERDICT.exec(own)?.[1]?.toUpperCase() as Verdict | undefined) ?? parseVerdict(own);
  return {
    model: input.model,
    reportText: input.text,
    finalVerdict: verdict ?? input.summary.majorityVerdict,
    dimensionAnalysis,
    keyStrengths: items(own, /strength/i),
    keyWeaknesses: items(own, /weakness/i),
    recommendations: items(own, /recommendation/i),
    dissentingOpinions: dissent.length === 1 && /\bunanimous\b/i.test(dissent[0]) ? [] : dissent,
    responseTimeMs: input.responseTimeMs,
  };
}

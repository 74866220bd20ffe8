import type { RevisionDecision } from '@conclave/contracts';

export interface ParsedRevision {
  decision: RevisionDecision | null;
  reasoning: string | null;
  /** What follows `REVISED RESPONSE:`; null when the marker is missing. */
  revisedResponse: string | null;
}

// Tolerant of markdown around the field names and values: `**Decision:** **REVISE**`.
// Every whitespace run is followed by a required token, so no pattern backtracks over long runs.
const DECISION = /DECISION[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?(REVISE|STAND|MERGE)\b/i;
const REASONING =
  /REASONING[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?([\s\S]+?)(?:\n[ \t]*\n|\n[ \t#*]*REVISED RESPONSE)/i;
const REVISED = /REVISED RESPONSE[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?\n?([\s\S]+)$/i;

export function parseRevision(text: string): ParsedRevision {
  const decision = (DECISION.exec(text)?.[1]?.toUpperCase() as RevisionDecision | undefined) ?? null;
  const reasoning = REASONING.exec(text)?.[1]?.replace(/\*\*$/, '').trim() || null;
  const revisedResponse = REVISED.exec(text)?.[1]?.trim() || null;
  return { decision, reasoning, revisedResponse };
}

/**
 * The response a debater ends round 2 with (04-debate.md §F): the text after `REVISED RESPONSE:`;
 * without that marker, the text after the DECISION/REASONING block; without a decision, the
 * whole revision; and the original answer when nothing is left.
 */
export function revisedResponseOf(text: string, original: string): string {
  const parsed = parseRevision(text);
  if (parsed.revisedResponse) return parsed.revisedResponse;
  if (!parsed.decision) return text.trim() || original;
  const lines = text.split('\n');
  const blockEnd = Math.max(
    lines.findIndex((l) => DECISION.test(l)),
    lines.findIndex((l) => /REASONING[ \t]*(?:\*+[ \t]*)?:/i.test(l)),
  );
  const after = lines
    .slice(blockEnd + 1)
    .join('\n')
    .trim();
  return after || original;
}

export const wordCount = (text: string): number => text.split(/\s+/).filter(Boolean).length;

import type { RevisionDecision } from '@conclave/contracts';

export interface ParsedRevision {
  decision: RevisionDecision | null;
  reasoning: string | null;
  /** What follows `REVISED RESPONSE:`; null when the marker is missing. */
  revisedResponse: string | null;
}

// Tolerant of markdown around the field names and values: `**Decision:** **REVISE**`.
// Every whitespace run is followed by a required token, so no pattern backtracks over long runs.
const DECISION = /DECISION[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?(REVISE|STAND|MERGE)\b/gi;
const REASONING = /REASONING[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?/i;
// The reasoning ends at a blank line or at the REVISED RESPONSE marker.
const REASONING_END = /\n[ \t]*\n|\n[ \t#*]*REVISED RESPONSE/i;
const REASONING_LINE = /REASONING[ \t]*(?:\*+[ \t]*)?:/i;
const MARKER = /REVISED RESPONSE[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?\n?/gi;

interface Block {
  decision: RevisionDecision | null;
  /** Where the debater's own DECISION line starts (0 without one). */
  start: number;
  /** Where the text after its `REVISED RESPONSE:` marker starts; null without a marker. */
  bodyStart: number | null;
}

/**
 * The debater's own DECISION / REASONING / REVISED RESPONSE block. When DECISION appears several
 * times, the last one wins — a debater that first quotes another response's "DECISION: STAND" and
 * then states its own is read by its own — except that a DECISION line inside the revised response
 * (after the block's `REVISED RESPONSE:` marker, with no marker of its own after it) is part of the
 * answer, not a decision: the last DECISION that a marker follows is preferred.
 */
function ownBlock(text: string): Block {
  const decisions = [...text.matchAll(DECISION)];
  const markers = [...text.matchAll(MARKER)];
  const lastMarker = markers.at(-1)?.index ?? -1;
  const chosen = decisions.filter((d) => d.index < lastMarker).at(-1) ?? decisions.at(-1);
  const start = chosen?.index ?? 0;
  const marker = markers.find((m) => m.index >= start) ?? markers[0];
  return {
    decision: chosen ? (chosen[1].toUpperCase() as RevisionDecision) : null,
    start,
    bodyStart: marker ? marker.index + marker[0].length : null,
  };
}

/** The first REASONING after `from`, up to a blank line or the marker; null when it never ends. */
function reasoningAfter(text: string, from: number): string | null {
  const rest = text.slice(from);
  const head = REASONING.exec(rest);
  if (!head) return null;
  const value = rest.slice(head.index + head[0].length);
  // at least one character, as in 04-debate.md's `(.+?)`
  const end = REASONING_END.exec(value.slice(1));
  if (!end) return null;
  return (
    value
      .slice(0, end.index + 1)
      .replace(/\*\*$/, '')
      .trim() || null
  );
}

export function parseRevision(text: string): ParsedRevision {
  const block = ownBlock(text);
  const reasoning = reasoningAfter(text, block.start);
  const revisedResponse = block.bodyStart === null ? null : text.slice(block.bodyStart).trim() || null;
  return { decision: block.decision, reasoning, revisedResponse };
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
  const { start } = ownBlock(text);
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const lines = text.slice(lineStart).split('\n');
  // the DECISION line is lines[0]; the REASONING line, when there is one, ends the block
  const reasoningAt = lines.findIndex((l) => REASONING_LINE.test(l));
  const after = lines
    .slice(Math.max(0, reasoningAt) + 1)
    .join('\n')
    .trim();
  return after || original;
}

export const wordCount = (text: string): number => text.split(/\s+/).filter(Boolean).length;

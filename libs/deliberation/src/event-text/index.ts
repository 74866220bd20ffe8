import { MODE_NAMES, type DeliveredEvent, type ModeName } from '@conclave/contracts';
import type { Audience, EventReading, Lines, ReadingContext } from './reading';
import { MODE_EVENT_TEXT } from './registry';
import { sharedEventText } from './shared.events';
import { plainPhaseLine } from './wording';

/**
 * The event describer: what a stored event means, as a line of text, for each audience (the CLI,
 * MCP progress, /v1 reasoning, the web timeline). Each mode declares how its own events read in
 * its folder (`modes/<mode>/<mode>.events.ts`), the events every mode sends read as in
 * `shared.events.ts`; the consumers keep only their framing. Imported as
 * `@conclave/deliberation/event-text` (also by the web client, which bundles these files only).
 */

export type { Audience, EventReading, EventTextTable, ModeEventText, ReadingContext } from './reading';
export { AUDIENCES } from './reading';
export { MODE_EVENT_TEXT } from './registry';
export { sharedEventText } from './shared.events';
export { oneLine, participantLabel, phaseLine, plainPhaseLine, stageLabel } from './wording';

type AnyReading = EventReading<DeliveredEvent>;

const own = (table: object, type: string): AnyReading | undefined =>
  Object.prototype.hasOwnProperty.call(table, type)
    ? ((table as Record<string, AnyReading>)[type] ?? undefined)
    : undefined;

/**
 * How an event type reads: the mode's own text when the mode is known, else the shared events',
 * else the first mode's (in MODE_NAMES order) that sends an event of that type. Modes sending the
 * same type (`stage1_complete`, `vote_complete`, `winner_declared`) give it the same CLI and MCP
 * text, so a reader that does not know the mode reads it the same.
 */
export function readingOf(type: string, mode: ModeName | null = null): AnyReading | undefined {
  const mine = mode ? own(MODE_EVENT_TEXT[mode].events, type) : undefined;
  if (mine) return mine;
  const shared = own(sharedEventText, type);
  if (shared) return shared;
  for (const name of MODE_NAMES) {
    const theirs = own(MODE_EVENT_TEXT[name].events, type);
    if (theirs) return theirs;
  }
  return undefined;
}

const asLines = (lines: Lines): string[] =>
  lines === null ? [] : typeof lines === 'string' ? [lines] : [...lines];

/**
 * The lines an event reads as for `audience` (none for most), without framing. An event type no
 * mode declares reads, for the CLI and MCP, as the plain line of a stage's start or end when its
 * name says so (`some_stage_complete` → `[some_stage] complete`), else as nothing. Events arrive
 * untyped: a reading is given the event as its type's payload says, and may throw on a payload of
 * another shape (the `reasoning` texts read every field defensively and do not).
 */
export function describeEvent(
  event: DeliveredEvent,
  audience: Audience,
  context: Partial<ReadingContext> = {},
): string[] {
  const full: ReadingContext = { mode: null, finalStage: null, count: null, ...context };
  const reading = readingOf(event.type, full.mode);
  if (!reading) {
    if (audience === 'reasoning' || audience === 'web') return [];
    return asLines(plainPhaseLine(event.type, audience));
  }
  const read = reading[audience];
  return read ? asLines(read(event, full)) : [];
}

/** The one line an event reads as for `audience`, or null: the CLI's, MCP's and the web's form. */
export function describeLine(
  event: DeliveredEvent,
  audience: Audience,
  context: Partial<ReadingContext> = {},
): string | null {
  return describeEvent(event, audience, context)[0] ?? null;
}

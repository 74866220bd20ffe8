import type { ModeEventPayloads, ModeName, TypedEventOf } from '@conclave/contracts';

/**
 * Who reads the line. Each keeps its own framing (the CLI's colours, the MCP notification, the
 * /v1 `reasoning_content` line, the web timeline's structure); the words come from here.
 *
 * - `cli`: the `conclave` CLI's progress line (`[stage2] complete: …`).
 * - `mcp`: the message of an MCP `notifications/progress` (`stage2 complete: …`).
 * - `reasoning`: the sentences of a /v1 answer's `reasoning_content` (`Stage 2: …`).
 * - `web`: the web timeline's line for an event it shows as text (`Resuming stage2 (…).`).
 */
export type Audience = 'cli' | 'mcp' | 'reasoning' | 'web';

export const AUDIENCES: readonly Audience[] = ['cli', 'mcp', 'reasoning', 'web'];

/** What a reader knows besides the event. */
export interface ReadingContext {
  /** The deliberation's mode, when the reader knows it (/v1 does; the CLI, MCP and web read by type). */
  mode: ModeName | null;
  /** `reasoning`: the stage whose single call writes the final text, streamed as written (no call line). */
  finalStage: string | null;
  /** `mcp`: a settled call's `(settled/started)` count in its stage. */
  count: string | null;
}

/** A line, several lines, or none. */
export type Lines = string | readonly string[] | null;

export type Reader<E> = (event: E, context: ReadingContext) => Lines;

/**
 * How one event reads for each audience. `null`: that audience gives the event no line (said on
 * purpose: every audience is named for every event type).
 */
export type EventReading<E> = { readonly [A in Audience]: Reader<E> | null };

/** A reading for every event type of a payload table (a missing type does not compile). */
export type EventTextTable<Table> = {
  readonly [T in keyof Table & string]: EventReading<TypedEventOf<Table, T>>;
};

/**
 * How a mode's events read: every event type of its own (ModeEventPayloads), and what its stages'
 * calls did when one succeeds (`reasoning`: "sim/a ranked the anonymised answers."); the key
 * `round_n` stands for every stage named `round_…` (Delphi's `round_1`, `round_2`, …).
 */
export interface ModeEventText<M extends ModeName> {
  readonly events: EventTextTable<ModeEventPayloads[M]>;
  readonly calls: Readonly<Record<string, string>>;
}

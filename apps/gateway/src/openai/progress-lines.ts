import type { DeliveredEvent, ModeName } from '@conclave/contracts';
import { describeEvent, oneLine } from '@conclave/deliberation/event-text';

/** The stage whose single call writes the mode's final text, streamed as it is written; none for vote and debate. */
export const FINAL_STAGE: Record<ModeName, { stage: string; startEvent: string } | null> = {
  council: { stage: 'stage3', startEvent: 'stage3_start' },
  jury: { stage: 'verdict', startEvent: 'verdict_start' },
  delphi: { stage: 'synthesis', startEvent: 'synthesis_start' },
  vote: null,
  debate: null,
};

const MAX_LINE = 300;

/**
 * The panel's progress as short lines of text (the `reasoning_content` of a /v1 answer), one
 * event at a time: who answered, rankings, votes, verdicts, debate decisions, Delphi rounds, in
 * the event describer's words (`@conclave/deliberation/event-text`, audience `reasoning`).
 * Anonymity holds as the mode keeps it during the run: Delphi panelists are numbered and their
 * estimates are given as a round's statistics only, never with an author; error texts of Delphi
 * panelists are left out (they may name the model).
 */
export class ProgressLines {
  constructor(private readonly mode: ModeName) {}

  /** The lines an event adds (none for most): each ends with a newline. */
  linesFor(event: DeliveredEvent): string[] {
    return describeEvent(event, 'reasoning', {
      mode: this.mode,
      finalStage: FINAL_STAGE[this.mode]?.stage ?? null,
    }).map((line) => `${oneLine(line, MAX_LINE)}\n`);
  }
}

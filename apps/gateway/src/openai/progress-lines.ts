import type { DeliveredEvent, ModeName } from '@conclave/contracts';
import { describeEvent, oneLine } from '@conclave/deliberation/event-text';
import { MODE_FACTS } from '@conclave/deliberation/facts';

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
      finalStage: MODE_FACTS[this.mode].finalStage?.stage ?? null,
    }).map((line) => `${oneLine(line, MAX_LINE)}\n`);
  }
}

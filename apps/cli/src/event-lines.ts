import type { DeliveredEvent } from '@conclave/contracts';
import { describeLine, participantLabel as labelFor, stageLabel } from '@conclave/deliberation/event-text';

export { stageLabel };

/** Who made a call: its model, or `#n` where the mode keeps authors anonymous (Delphi panelists). */
export const participantLabel = (participant: string | number): string => labelFor(participant, 'cli');

/**
 * One progress line for an event, or null for events not worth a line. The words are the event
 * describer's (`@conclave/deliberation/event-text`, audience `cli`); the CLI frames them.
 */
export function describeEvent(event: DeliveredEvent): string | null {
  return describeLine(event, 'cli');
}

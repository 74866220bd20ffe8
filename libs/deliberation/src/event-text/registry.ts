import type { ModeName } from '@conclave/contracts';
import { councilEventText } from '../modes/council/council.events';
import { debateEventText } from '../modes/debate/debate.events';
import { delphiEventText } from '../modes/delphi/delphi.events';
import { juryEventText } from '../modes/jury/jury.events';
import { voteEventText } from '../modes/vote/vote.events';
import type { ModeEventText } from './reading';

/**
 * How each mode's events read, declared in the mode's folder (`modes/<mode>/<mode>.events.ts`). A
 * full record: a mode without its texts does not compile. Only these files and the contracts are
 * imported, so the web client can bundle the describer without the engine.
 */
export const MODE_EVENT_TEXT: { readonly [M in ModeName]: ModeEventText<M> } = {
  council: councilEventText,
  vote: voteEventText,
  jury: juryEventText,
  debate: debateEventText,
  delphi: delphiEventText,
};

/** Every mode's call texts in one table, by stage (stage names of different modes that agree share a text). */
const CALLS: Readonly<Record<string, string>> = Object.assign(
  {},
  ...Object.values(MODE_EVENT_TEXT).map((text) => text.calls),
);

/** What a call of `stage` did when it succeeded (`answered` for a stage no mode names). */
export function callDid(stage: string): string {
  const own = (key: string) => (Object.prototype.hasOwnProperty.call(CALLS, key) ? CALLS[key] : undefined);
  return own(stage) ?? (stage.startsWith('round_') ? own('round_n') : undefined) ?? 'answered';
}

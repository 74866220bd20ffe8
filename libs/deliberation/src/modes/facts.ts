import type { ModeFacts, ModeName } from '@conclave/contracts';
import { councilFacts } from './council/council.facts';
import { debateFacts } from './debate/debate.facts';
import { delphiFacts } from './delphi/delphi.facts';
import { juryFacts } from './jury/jury.facts';
import { voteFacts } from './vote/vote.facts';

/**
 * Every mode's facts (they import nothing but contracts), for code that may not load the engine or
 * the modes' parsers: the CLI, libs/outcomes and libs/analysis import this file alone, as
 * `@conclave/deliberation/facts` (the web client could too). A mode left out does not compile.
 * Adding a mode: one line here and one in `./index.ts`.
 */
export const MODE_FACTS: Readonly<Record<ModeName, ModeFacts>> = {
  council: councilFacts,
  vote: voteFacts,
  jury: juryFacts,
  debate: debateFacts,
  delphi: delphiFacts,
};

/** A mode's facts; undefined for a name that is no mode (a stored row from a removed mode). */
export const modeFacts = (mode: string): ModeFacts | undefined =>
  Object.hasOwn(MODE_FACTS, mode) ? MODE_FACTS[mode as ModeName] : undefined;

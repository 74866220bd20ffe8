import type { ModeName } from '@conclave/contracts';
import type { SimulatedResponder } from '@conclave/llm';
import type { AnyModeDefinition } from '../engine/types';
import { judgeResponder } from '../grading/model-grader.sim';
import { answerResponder, titleResponder, unaffectedByFences } from '../shared/simulation';
import { councilMode } from './council/council.mode';
import { councilResponders } from './council/council.sim';
import { debateMode } from './debate/debate.mode';
import { delphiMode } from './delphi/delphi.mode';
import { delphiResponders } from './delphi/delphi.sim';
import { debateResponders } from './debate/debate.sim';
import { juryMode } from './jury/jury.mode';
import { voteMode } from './vote/vote.mode';
import { voteResponders } from './vote/vote.sim';
import { juryResponders } from './jury/jury.sim';

/**
 * Every mode the product runs; a mode left out does not compile. Adding a mode: its folder, one
 * line here, one line below, one in `./facts.ts` (and its name in contracts' MODE_NAMES).
 */
export const MODES: Readonly<Record<ModeName, AnyModeDefinition>> = {
  council: councilMode,
  jury: juryMode,
  debate: debateMode,
  delphi: delphiMode,
  vote: voteMode,
};

export const SIMULATED_RESPONDERS: SimulatedResponder[] = [
  titleResponder,
  judgeResponder,
  ...councilResponders,
  ...juryResponders,
  ...debateResponders,
  ...delphiResponders,
  ...voteResponders,
].map(unaffectedByFences);
export const SIMULATED_FALLBACK = answerResponder;

/** The mode of that name; undefined for a name that is no mode (a stored row from a removed mode). */
export function modeDefinition(mode: ModeName): AnyModeDefinition | undefined {
  return Object.hasOwn(MODES, mode) ? MODES[mode] : undefined;
}

export { MODE_FACTS, modeFacts } from './facts';

import type { SimulatedResponder } from '@conclave/llm';
import { gradedVote, labeledBlocks, simulatedVoter } from '../../shared/simulation';
import { TIEBREAK_PROMPT_MARKER, VOTE_PROMPT_OPENING } from './vote.prompts';

/**
 * The chairman breaking a tie. It picks the last of the tied labels (so a chairman's choice and
 * the alphabetical fallback differ); `voteA`…`voteF` make it name that label, tied or not. In a
 * graded run without those it names a tied response giving the answer it chooses (gradedVote:
 * `follow` / `keep` / `random`), else the last as before.
 */
export const tiebreakResponder: SimulatedResponder = {
  kind: 'tiebreak',
  matches: (prompt) => prompt.startsWith(TIEBREAK_PROMPT_MARKER),
  respond: (ctx) => {
    const responses = labeledBlocks(ctx.prompt);
    const tied = responses.map((r) => r.label);
    const fixed = ctx.flags.find((f) => /^vote[A-F]$/.test(f));
    const choice = fixed
      ? `Response ${fixed.slice(4)}`
      : (gradedVote(ctx, responses) ?? tied.at(-1) ?? 'Response A');
    return `[simulated tiebreak by ${ctx.model}] On balance ${choice} is the stronger answer.\n\nVOTE: ${choice}`;
  },
};

export const voteResponders: SimulatedResponder[] = [simulatedVoter(VOTE_PROMPT_OPENING), tiebreakResponder];

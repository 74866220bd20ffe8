import { createFence } from '../../shared/fence';
import { buildVotePrompt } from '../../shared/voting';

export const VOTE_PROMPT_OPENING =
  'All respondents have answered the question independently. Vote for the single best response.';
export const TIEBREAK_PROMPT_MARKER = 'The vote on the responses below ended in a tie.';

export const buildVoteModePrompt = (
  userQuery: string,
  labeled: { label: string; response: string }[],
  seed = '',
): string => buildVotePrompt(VOTE_PROMPT_OPENING, userQuery, labeled, seed);

/** The chairman's tiebreak (02-vote.md §A.4), fenced like the vote prompt (shared/fence.ts). */
export function buildTiebreakPrompt(
  userQuery: string,
  tied: { label: string; response: string }[],
  seed = '',
): string {
  const fence = createFence([userQuery, ...tied.map((t) => t.response)], `${seed}:tiebreak`);
  const blocks = tied.map((t) => `--- ${t.label} ---\n${fence.wrap('RESPONSE', t.response)}\n`).join('\n');
  const letters = tied.map((t) => t.label.replace('Response ', '')).join(', ');
  return `${TIEBREAK_PROMPT_MARKER} As chairman, break the tie: choose the single best of the tied responses.

${fence.notice}

Question: ${fence.wrap('QUESTION', userQuery)}

${blocks}
Consider: accuracy, completeness, clarity, helpfulness, and practical value.

You MUST end your response with your choice in this exact format:
VOTE: Response X

where X is one of: ${letters}.`;
}

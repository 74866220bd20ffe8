import { fencedResponses } from '../../shared/fence';
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
  const letters = tied.map((t) => t.label.replace('Response ', '')).join(', ');
  return `${TIEBREAK_PROMPT_MARKER} As chairman, break the tie: choose the single best of the tied responses.

${fencedResponses(userQuery, tied, `${seed}:tiebreak`)}
Consider: accuracy, completeness, clarity, helpfulness, and practical value.

You MUST end your response with your choice in this exact format:
VOTE: Response X

where X is one of: ${letters}.`;
}

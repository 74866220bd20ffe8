import { buildVotePrompt } from '../../shared/voting';

export const VOTE_PROMPT_OPENING =
  'All respondents have answered the question independently. Vote for the single best response.';
export const TIEBREAK_PROMPT_MARKER = 'The vote on the responses below ended in a tie.';

export const buildVoteModePrompt = (
  userQuery: string,
  labeled: { label: string; response: string }[],
): string => buildVotePrompt(VOTE_PROMPT_OPENING, userQuery, labeled);

export function buildTiebreakPrompt(userQuery: string, tied: { label: string; response: string }[]): string {
  const blocks = tied.map((t) => `--- ${t.label} ---\n${t.response}\n`).join('\n');
  const letters = tied.map((t) => t.label.replace('Response ', '')).join(', ');
  return `${TIEBREAK_PROMPT_MARKER} As chairman, break the tie: choose the single best of the tied responses.

Question: ${userQuery}

${blocks}
Consider: accuracy, completeness, clarity, helpfulness, and practical value.

You MUST end your response with your choice in this exact format:
VOTE: Response X

where X is one of: ${letters}.`;
}

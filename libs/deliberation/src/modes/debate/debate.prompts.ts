import { createFence } from '../../shared/fence';
import { buildVotePrompt } from '../../shared/voting';

export const REVISION_PROMPT_MARKER =
  'You previously answered a question. Now you will see how other respondents answered the same question (anonymously).';
export const DEBATE_VOTE_PROMPT_MARKER =
  'After a round of deliberation, all respondents have finalized their answers. Vote for the single best response.';

/**
 * 04-debate.md's revision prompt, unique per debater. Containment layer (shared/fence.ts): the
 * question, the debater's own answer and the others' answers are fenced and declared data, so an
 * answer that says "DECISION: STAND" or "ignore your instructions" cannot steer another debater.
 */
export function buildRevisionPrompt(input: {
  userQuery: string;
  yourOriginalResponse: string;
  otherResponses: { label: string; response: string }[];
  seed?: string;
}): string {
  const fence = createFence(
    [input.userQuery, input.yourOriginalResponse, ...input.otherResponses.map((o) => o.response)],
    `${input.seed ?? ''}:revision`,
  );
  const others = input.otherResponses
    .map((o) => `--- ${o.label} ---\n${fence.wrap('RESPONSE', o.response)}\n`)
    .join('\n');
  return `${REVISION_PROMPT_MARKER} You may revise your response or stand by your original if you believe it was superior.

${fence.notice}

ORIGINAL QUESTION:
${fence.wrap('QUESTION', input.userQuery)}

YOUR ORIGINAL RESPONSE:
${fence.wrap('YOUR RESPONSE', input.yourOriginalResponse)}

OTHER RESPONSES:
${others}
Instructions:
1. Carefully consider the other responses. What insights do they offer that yours missed?
2. Identify any errors or omissions in your original response.
3. You have three options:
   a) REVISE: Produce an improved response incorporating insights from others
   b) STAND: Keep your original response unchanged (explain why)
   c) MERGE: Substantially rewrite by combining the best elements of all responses

State your choice, then provide the response:

DECISION: [REVISE|STAND|MERGE]
REASONING: [1-2 sentences on why]

REVISED RESPONSE:
[Your final response — if STAND, repeat your original]`;
}

export function buildVoteOnRevisedPrompt(
  userQuery: string,
  labeled: { label: string; response: string }[],
  seed = '',
): string {
  return buildVotePrompt(DEBATE_VOTE_PROMPT_MARKER, userQuery, labeled, seed);
}

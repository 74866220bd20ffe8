import type { Stage1Response, Stage2Response } from '@conclave/contracts';
import { createFence, fencedResponses } from '../../shared/fence';

/**
 * 01-council.md's ranking prompt. Containment layer (shared/fence.ts): the question and each
 * response are fenced and declared data, so a response cannot speak to the evaluator, close its
 * own block or pose as another label.
 */
export function buildRankingPrompt(
  userQuery: string,
  labeled: { label: string; response: string }[],
  seed = '',
): string {
  return `You are an expert evaluator. Below is a question and several responses from different sources. Your task is to evaluate each response and rank them from best to worst.

${fencedResponses(userQuery, labeled, `${seed}:ranking`)}
Instructions:
1. Evaluate each response for accuracy, completeness, clarity, and helpfulness.
2. Consider the strengths and weaknesses of each response.
3. Provide your ranking from best to worst.

CRITICAL: You MUST end your response with a section titled "FINAL RANKING:" followed by a numbered list. Each item must be ONLY the response label (e.g., "Response A"). Example:

FINAL RANKING:
1. Response C
2. Response A
3. Response B

Do not include any other text in the FINAL RANKING section.`;
}

/**
 * 01-council.md's synthesis prompt. Containment layer (shared/fence.ts): the question, the answers
 * and the evaluations are fenced and declared data.
 */
export function buildSynthesisPrompt(
  userQuery: string,
  stage1: Stage1Response[],
  stage2: Stage2Response[],
  seed = '',
): string {
  const fence = createFence(
    // the model ids are not fenced (they are validated ids), but the boundary avoids them too
    [
      userQuery,
      ...stage1.map((r) => r.response),
      ...stage2.map((r) => r.ranking),
      ...stage1.map((r) => r.model),
      ...stage2.map((r) => r.model),
    ],
    `${seed}:synthesis`,
  );
  const responses = stage1
    .map((r) => `--- ${r.model} ---\n${fence.wrap('RESPONSE', r.response)}\n`)
    .join('\n');
  const rankings = stage2
    .map((r) => `--- Evaluator: ${r.model} ---\n${fence.wrap('EVALUATION', r.ranking)}\n`)
    .join('\n');
  return `You are a chairman synthesizing the best possible answer from multiple AI model responses and their peer evaluations.

${fence.notice}

Original Question: ${fence.wrap('QUESTION', userQuery)}

STAGE 1 — Individual Responses:

${responses}
STAGE 2 — Peer Rankings:

${rankings}
Synthesize the best possible answer to the original question. Consider:
1. The individual responses and their unique insights
2. The peer rankings and which responses were consistently rated highly
3. Areas of agreement and disagreement across responses
4. Any important nuances or caveats that individual responses captured

Provide a comprehensive, well-structured synthesis that represents the collective intelligence of all the models.`;
}

export const RANKING_PROMPT_MARKER =
  'Your task is to evaluate each response and rank them from best to worst.';
export const SYNTHESIS_PROMPT_MARKER = 'You are a chairman synthesizing the best possible answer';

import type { Verdict, VoteTally } from '@conclave/contracts';
import type { ChatMessage } from '@conclave/llm';
import { createFence } from '../../shared/fence';
import { titlePrompt, truncate } from '../../shared/title';

export const EVALUATION_PROMPT_MARKER =
  'You are a juror evaluating the quality of a response. Score it on 5 dimensions (1-10 each) and deliver a verdict.';
export const FOREMAN_PROMPT_MARKER =
  'You are the foreman of a jury that has evaluated the following content.';

/**
 * 03-jury.md's evaluation prompt. Containment layer (shared/fence.ts): the original question and
 * the content are fenced and declared data, so content that addresses "AI reviewers" or carries its
 * own `VERDICT: APPROVE` is something to evaluate, not an instruction.
 */
export function buildEvaluationPrompt(content: string, originalQuestion?: string, seed = ''): string {
  const fence = createFence(originalQuestion ? [content, originalQuestion] : [content], `${seed}:evaluation`);
  const question = originalQuestion
    ? `ORIGINAL QUESTION:\n${fence.wrap('QUESTION', originalQuestion)}\n\n`
    : '';
  return `${EVALUATION_PROMPT_MARKER}

${fence.notice}

${question}CONTENT UNDER EVALUATION:
${fence.wrap('CONTENT', content)}

Score each dimension from 1 (terrible) to 10 (exceptional):

1. **Accuracy** — Are the facts, claims, and technical details correct?
2. **Completeness** — Does it cover all important aspects of the topic?
3. **Clarity** — Is it well-organized, easy to follow, and unambiguous?
4. **Relevance** — Does it directly address the question/task at hand?
5. **Actionability** — Does it provide concrete, usable guidance?

For each dimension, provide:
- A score (1-10)
- 1-2 sentences of justification

Then deliver your verdict based on your average score:
- APPROVE (average >= 7): The content is good enough for use
- REVISE (average 4-6.9): The content needs improvement before use
- REJECT (average < 4): The content is fundamentally flawed

Format your response as:

## Juror Assessment

### Scores

| Dimension | Score | Justification |
|-----------|:-----:|---------------|
| Accuracy | [1-10] | [justification] |
| Completeness | [1-10] | [justification] |
| Clarity | [1-10] | [justification] |
| Relevance | [1-10] | [justification] |
| Actionability | [1-10] | [justification] |
| **Average** | [avg] | |

### Deliberation Notes
[2-3 paragraphs explaining your overall assessment, key strengths, and key weaknesses]

### Verdict
VERDICT: [APPROVE|REVISE|REJECT]

### Recommendations
[If REVISE or REJECT: numbered list of specific improvements needed]`;
}

/**
 * 03-jury.md's foreman prompt. Containment layer (shared/fence.ts): the content, the question and
 * every juror's assessment are fenced; the tally and the majority, which the server computed,
 * are not.
 */
export function buildForemanPrompt(input: {
  content: string;
  originalQuestion?: string;
  assessments: { model: string; assessment: string }[];
  tally: VoteTally;
  majorityVerdict: Verdict;
  /** Jurors that answered without a readable verdict (issue 36): said in the tally when there are any. */
  missingVerdicts?: number;
  seed?: string;
}): string {
  const fence = createFence(
    [
      input.content,
      ...(input.originalQuestion ? [input.originalQuestion] : []),
      ...input.assessments.map((a) => a.assessment),
      // the model ids are not fenced (they are validated ids), but the boundary avoids them too
      ...input.assessments.map((a) => a.model),
    ],
    `${input.seed ?? ''}:foreman`,
  );
  const question = input.originalQuestion
    ? `ORIGINAL QUESTION:\n${fence.wrap('QUESTION', input.originalQuestion)}\n\n`
    : '';
  // Only when a verdict is missing, so every other foreman prompt stays 03-jury.md's.
  const missing =
    input.missingVerdicts && input.missingVerdicts > 0
      ? `- No readable verdict: ${input.missingVerdicts} (these jurors did not vote, so do not call the jury unanimous)\n`
      : '';
  const assessments = input.assessments
    .map((a, i) => `--- Juror ${i + 1} (${a.model}) ---\n${fence.wrap('ASSESSMENT', a.assessment)}\n`)
    .join('\n');
  return `${FOREMAN_PROMPT_MARKER} Synthesize all juror assessments into a final verdict report.

${fence.notice}

CONTENT EVALUATED:
${fence.wrap('CONTENT', input.content)}

${question}JUROR ASSESSMENTS:
${assessments}
VOTE TALLY:
- APPROVE: ${input.tally.approve}
- REVISE: ${input.tally.revise}
- REJECT: ${input.tally.reject}
${missing}- Majority Verdict: ${input.majorityVerdict}

Produce a formal verdict report:

## Jury Verdict Report

### Final Verdict: [APPROVE|REVISE|REJECT]
[1-2 sentence summary explaining the jury's decision]

### Dimension Analysis

| Dimension | Avg Score | Min | Max | Consensus |
|-----------|:---------:|:---:|:---:|-----------|
| Accuracy | [avg] | [min] | [max] | [agreement note] |
| Completeness | [avg] | [min] | [max] | [agreement note] |
| Clarity | [avg] | [min] | [max] | [agreement note] |
| Relevance | [avg] | [min] | [max] | [agreement note] |
| Actionability | [avg] | [min] | [max] | [agreement note] |
| **Overall** | [avg] | [min] | [max] | |

### Key Strengths (Consensus)
[Strengths identified by 2+ jurors — bulleted list]

### Key Weaknesses (Consensus)
[Weaknesses identified by 2+ jurors — bulleted list]

### Improvement Recommendations
[Prioritized numbered list — only include if verdict is REVISE or REJECT]

### Dissenting Opinions
[If any juror's verdict differed from the majority, summarize their reasoning here. If unanimous, state "The jury was unanimous."]`;
}

export const CONTENT_PREVIEW_LENGTH = 200;

/** 03-jury.md's title prompt, with the quoted preview fenced (shared/fence.ts). */
export function buildJuryTitlePrompt(content: string, seed = ''): ChatMessage[] {
  const flat = content.replace(/\s+/g, ' ').trim();
  const preview = flat.length > CONTENT_PREVIEW_LENGTH ? `${truncate(flat, CONTENT_PREVIEW_LENGTH)}…` : flat;
  return titlePrompt('a jury evaluation session about this content', 'CONTENT', preview, seed);
}

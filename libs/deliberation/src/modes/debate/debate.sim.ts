import type { SimulatedResponder } from '@conclave/llm';
import { readFences } from '../../shared/fence';
import { finalAnswerOf, sameAnswer, withFinalAnswer } from '../../shared/graded-simulation';
import { gradedChoice, gradedItem, labeledBlocks, simulatedVoter } from '../../shared/simulation';
import { DEBATE_VOTE_PROMPT_MARKER, REVISION_PROMPT_MARKER } from './debate.prompts';

/**
 * A debater reconsidering. Flags: `revise`, `stand`, `merge` force the decision; `markdown`
 * writes `Decision: **REVISE**`; `nodecision` leaves out the DECISION line; `nomarker` leaves
 * out `REVISED RESPONSE:`. In a graded run its revised response ends with the answer it chooses
 * among its own (its original's final answer) and the others' (gradedChoice: `follow` the strict
 * majority of all of them, else its own; `keep`; `random`; `stand` alone means `keep`); its
 * decision, unless forced, is STAND when that is its original answer, else REVISE.
 */
export const revisionResponder: SimulatedResponder = {
  kind: 'revision',
  matches: (prompt) => prompt.startsWith(REVISION_PROMPT_MARKER),
  respond: (ctx) => {
    const original =
      readFences(ctx.prompt)
        .blocks.find((b) => b.kind === 'YOUR RESPONSE')
        ?.text.trim() ?? '';
    const shown = labeledBlocks(ctx.prompt);
    const others = shown.map((r) => r.label);
    const forced = ['revise', 'stand', 'merge'].find((d) => ctx.flags.includes(d));
    const roll = ctx.random();
    const item = gradedItem(ctx);
    const mine = finalAnswerOf(original);
    const chosen = item
      ? gradedChoice(
          ctx,
          item,
          [mine, ...shown.map((r) => finalAnswerOf(r.text))],
          mine ?? undefined,
          forced === 'stand' ? 'keep' : 'follow',
        )
      : null;
    const graded = chosen === null ? null : sameAnswer(chosen, mine) ? 'stand' : 'revise';
    const decision = (
      forced ??
      graded ??
      (roll < 0.5 ? 'revise' : roll < 0.8 ? 'stand' : 'merge')
    ).toUpperCase();
    const cited = others[Math.floor(ctx.random() * others.length)] ?? 'another response';
    const reasoning =
      decision === 'STAND'
        ? 'My original response already covers the key points the others raise.'
        : decision === 'MERGE'
          ? `Combining the strongest parts of every response, especially ${cited}, gives a fuller answer.`
          : `${cited} raised a point my original response missed.`;
    const written =
      decision === 'STAND'
        ? original
        : decision === 'MERGE'
          ? `${original}\n\nMerged from the other responses: each adds a perspective worth keeping, and together they cover the trade-offs.`
          : `${original}\n\nRevised after reading ${cited}: the costs of change deserve an explicit mention.`;
    const revised = chosen === null ? written : withFinalAnswer(written, chosen);
    const decisionLine = ctx.flags.includes('markdown')
      ? `Decision: **${decision}**`
      : `DECISION: ${decision}`;
    return [
      ...(ctx.flags.includes('nodecision') ? [] : [decisionLine]),
      `REASONING: ${reasoning}`,
      '',
      ...(ctx.flags.includes('nomarker') ? [] : ['REVISED RESPONSE:']),
      revised,
    ].join('\n');
  },
};

export const debateVoteResponder = simulatedVoter(DEBATE_VOTE_PROMPT_MARKER);

export const debateResponders: SimulatedResponder[] = [revisionResponder, debateVoteResponder];

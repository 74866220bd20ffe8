import type { SimulatedResponder } from '@conclave/llm';
import { readFences } from '../../shared/fence';
import { finalAnswerOf, withFinalAnswer } from '../../shared/graded-simulation';
import { gradedChoice, gradedItem, labeledBlocks, simulatedQuality } from '../../shared/simulation';
import { RANKING_PROMPT_MARKER, SYNTHESIS_PROMPT_MARKER } from './council.prompts';

/**
 * Ranks by a quality every evaluator shares plus personal noise, so the panel mostly agrees and
 * sometimes does not. Flags `rank2`, `rank3`, `rank4` answer in the format that only the
 * corresponding parseRanking fallback level can read.
 */
export const councilRankingResponder: SimulatedResponder = {
  kind: 'rank',
  matches: (prompt) => prompt.includes(RANKING_PROMPT_MARKER),
  respond: (ctx) => {
    const ranked = labeledBlocks(ctx.prompt)
      .map((r) => ({ ...r, score: simulatedQuality(r.text, ctx.seed) + ctx.random() * 0.45 }))
      .sort((a, b) => b.score - a.score);
    const labels = ranked.map((r) => r.label);
    const critique = ranked
      .map((r, i) =>
        i === 0
          ? `${r.label} is the most complete and clearly argued.`
          : `${r.label} makes fair points but is ${i === ranked.length - 1 ? 'the least convincing' : 'less thorough'}.`,
      )
      .join(' ');
    const intro = `[simulated evaluation by ${ctx.model}] ${critique}`;
    if (ctx.flags.includes('rank2')) return `${intro}\n\nFINAL RANKING: ${labels.join(', then ')}`;
    if (ctx.flags.includes('rank3'))
      return `${intro}\n\nMy order:\n${labels.map((l, i) => `${i + 1}. ${l}`).join('\n')}`;
    if (ctx.flags.includes('rank4')) {
      return `[simulated evaluation by ${ctx.model}] Best is ${labels.join(', followed by ')}.`;
    }
    return `${intro}\n\nFINAL RANKING:\n${labels.map((l, i) => `${i + 1}. ${l}`).join('\n')}`;
  },
};

/**
 * The chairman. In a graded run its synthesis ends with the answer it chooses among the members'
 * final answers: `follow` (the default) the strict majority's, else its own (acc<N>, wrong
 * without one); `keep` its own; `random` one of theirs.
 */
export const councilSynthesisResponder: SimulatedResponder = {
  kind: 'synthesis',
  matches: (prompt) => prompt.includes(SYNTHESIS_PROMPT_MARKER),
  respond: (ctx) => {
    const { blocks } = readFences(ctx.prompt);
    const question =
      blocks
        .find((b) => b.kind === 'QUESTION')
        ?.text.split('\n')
        .find((l) => l.trim()) ?? 'the question';
    const models = blocks.flatMap((b) =>
      b.kind === 'RESPONSE' ? [/^--- ([^\s]+\/[^\s]+) ---$/.exec(b.header)?.[1] ?? '?'] : [],
    );
    const evaluators = blocks.filter((b) => b.kind === 'EVALUATION').length;
    const item = gradedItem(ctx);
    const chosen = item
      ? gradedChoice(
          ctx,
          item,
          blocks.flatMap((b) => (b.kind === 'RESPONSE' ? [finalAnswerOf(b.text)] : [])),
        )
      : null;
    const synthesis = [
      `[simulated synthesis by ${ctx.model}]`,
      `On "${question}", the council (${models.join(', ')}) agrees on the essentials and differs on emphasis.`,
      '',
      `Drawing on ${models.length} answers and ${evaluators} peer evaluation(s):`,
      '1. Context matters more than any general rule.',
      '2. Start small, measure, and revisit the decision as evidence accumulates.',
      '3. The long-term maintenance burden deserves as much weight as the initial effort.',
      '',
      'Where the answers disagreed, the better-ranked ones gave the clearer reasoning; this synthesis follows them.',
    ].join('\n');
    return chosen === null ? synthesis : withFinalAnswer(synthesis, chosen);
  },
};

export const councilResponders: SimulatedResponder[] = [councilRankingResponder, councilSynthesisResponder];

import { hashString, seededRandom, type SimulatedResponder } from '@conclave/llm';
import { simulatedAnswer, simulatedQuality } from '../../shared/simulation';
import { DEBATE_VOTE_PROMPT_MARKER, REVISION_PROMPT_MARKER } from './debate.prompts';

const between = (text: string, start: string, end: string): string => {
  const from = text.indexOf(start);
  if (from < 0) return '';
  const to = text.indexOf(end, from + start.length);
  return text.slice(from + start.length, to < 0 ? undefined : to).trim();
};

/**
 * A debater reconsidering. Flags: `revise`, `stand`, `merge` force the decision; `markdown`
 * writes `Decision: **REVISE**`; `nodecision` leaves out the DECISION line; `nomarker` leaves
 * out `REVISED RESPONSE:`.
 */
export const revisionResponder: SimulatedResponder = {
  kind: 'revision',
  matches: (prompt) => prompt.startsWith(REVISION_PROMPT_MARKER),
  respond: (ctx) => {
    const original = between(ctx.prompt, 'YOUR ORIGINAL RESPONSE:\n', '\n\nOTHER RESPONSES:');
    const others = [...ctx.prompt.matchAll(/^--- (Response [A-Z]) ---$/gm)].map((m) => m[1]);
    const forced = ['revise', 'stand', 'merge'].find((d) => ctx.flags.includes(d));
    const roll = ctx.random();
    const decision = (forced ?? (roll < 0.5 ? 'revise' : roll < 0.8 ? 'stand' : 'merge')).toUpperCase();
    const cited = others[Math.floor(ctx.random() * others.length)] ?? 'another response';
    const reasoning =
      decision === 'STAND'
        ? 'My original response already covers the key points the others raise.'
        : decision === 'MERGE'
          ? `Combining the strongest parts of every response, especially ${cited}, gives a fuller answer.`
          : `${cited} raised a point my original response missed.`;
    const revised =
      decision === 'STAND'
        ? original
        : decision === 'MERGE'
          ? `${original}\n\nMerged from the other responses: each adds a perspective worth keeping, and together they cover the trade-offs.`
          : `${original}\n\nRevised after reading ${cited}: the costs of change deserve an explicit mention.`;
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

/**
 * A voter. It favours the response the whole panel rates best, with personal noise. Flags:
 * `voteA`…`voteF` vote for that label, `self` for its own response, `novote` names no
 * response, `badlabel` votes for a label that does not exist.
 */
export const debateVoteResponder: SimulatedResponder = {
  kind: 'vote',
  matches: (prompt) => prompt.startsWith(DEBATE_VOTE_PROMPT_MARKER),
  respond: (ctx) => {
    if (ctx.flags.includes('novote')) return 'These responses are all reasonable; I cannot pick one.';
    if (ctx.flags.includes('badlabel')) return 'None of these is quite right.\n\nVOTE: Response Z';
    const blocks = ctx.prompt.split(/^--- (Response [A-Z]) ---$/m);
    const responses: { label: string; text: string }[] = [];
    for (let i = 1; i + 1 < blocks.length; i += 2) {
      responses.push({ label: blocks[i], text: blocks[i + 1].split('\nConsider:')[0].trim() });
    }
    const fixed = /^vote([A-F])$/.exec(ctx.flags.find((f) => /^vote[A-F]$/.test(f)) ?? '')?.[1];
    let choice = fixed ? `Response ${fixed}` : undefined;
    if (!choice && ctx.flags.includes('self')) {
      const question = /^Question: (.*)$/m.exec(ctx.prompt)?.[1] ?? '';
      const own = simulatedAnswer(
        { ...ctx, random: seededRandom(hashString(`${ctx.seed}|${ctx.model}|${question}`)) },
        question,
      );
      choice = responses.find((r) => r.text.includes(own))?.label;
    }
    if (!choice) {
      choice = responses
        .map((r) => ({ label: r.label, score: simulatedQuality(r.text, ctx.seed) + ctx.random() * 0.3 }))
        .sort((a, b) => b.score - a.score)[0]?.label;
    }
    return `[simulated vote by ${ctx.model}] ${choice ?? 'Response A'} is the most complete and practical.\n\nVOTE: ${choice ?? 'Response A'}`;
  },
};

export const debateResponders: SimulatedResponder[] = [revisionResponder, debateVoteResponder];

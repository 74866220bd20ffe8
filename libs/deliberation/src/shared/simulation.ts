import {
  hashString,
  pick,
  seededRandom,
  type SimulatedResponder,
  type SimulationContext,
} from '@conclave/llm';
import { readFences, withoutFences } from './fence';
import {
  accuracyOf,
  answerToward,
  behaviourOf,
  finalAnswerOf,
  ownAnswer,
  pickRandom,
  sameAnswer,
  withFinalAnswer,
  type SimulatedItem,
} from './graded-simulation';

const ANGLES = [
  'Start from first principles',
  'Look at the practical trade-offs',
  'Consider the historical record',
  'Weigh the risks before the benefits',
  'Think about who is affected',
  'Separate what is known from what is assumed',
];
const POINTS = [
  'the costs are easy to underestimate at the start',
  'context matters more than any general rule',
  'the simplest option that works is usually the right first step',
  'measurement beats intuition once the basics are in place',
  'the long-term maintenance burden deserves as much weight as the initial effort',
  'reasonable experts disagree here, mostly about priorities rather than facts',
  'the answer changes with scale',
  'a small experiment would settle much of the uncertainty',
];
const CLOSINGS = [
  'In short: decide what matters most, then pick the option that serves it.',
  'My recommendation is to start small, measure, and revisit the decision.',
  'Overall, the balance of evidence favours a cautious, incremental approach.',
  'The best answer depends on constraints, but the reasoning above should transfer.',
];

function topic(question: string): string {
  const words = question.replace(/\s+/g, ' ').trim().split(' ');
  const head = words.slice(0, 12).join(' ');
  return words.length > 12 ? `${head}…` : head;
}

/** A plausible free-text answer that differs by model and is stable for a seed. */
export function simulatedAnswer(ctx: SimulationContext, question: string): string {
  const points = [...POINTS].sort(() => ctx.random() - 0.5).slice(0, 2 + Math.floor(ctx.random() * 2));
  return [
    `[simulated answer] ${pick(ANGLES, ctx.random)} on "${topic(question)}".`,
    '',
    ...points.map((p, i) => `${i + 1}. ${p.charAt(0).toUpperCase()}${p.slice(1)}.`),
    '',
    pick(CLOSINGS, ctx.random),
  ].join('\n');
}

/** A stable 0..1 "quality" of a text, shared by every simulated evaluator so they mostly agree. */
export function simulatedQuality(text: string, seed: string): number {
  return (hashString(`${seed}|quality|${text}`) % 1000) / 1000;
}

export const titleResponder: SimulatedResponder = {
  kind: 'title',
  matches: (prompt) => prompt.startsWith('Generate a brief title'),
  respond: (ctx) => {
    const quoted = readFences(ctx.prompt).blocks[0]?.text ?? ctx.prompt;
    const question = /"([\s\S]*)"/.exec(quoted)?.[1] ?? '';
    const words = question
      .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
      .split(/\s+/)
      .filter((w) => w.length > 3)
      .slice(0, 4);
    const title = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()).join(' ');
    return `Simulated: ${title || 'Conversation'}`;
  },
};

/**
 * The graded item a call belongs to (issue 37): its expected answer (absent: not a graded run,
 * null here) and its question, the prompt's QUESTION block or, for a panelist's own answer, the
 * prompt itself.
 */
export function gradedItem(ctx: SimulationContext): SimulatedItem | null {
  if (ctx.expected === undefined) return null;
  const question = readFences(ctx.prompt).blocks.find((b) => b.kind === 'QUESTION')?.text ?? ctx.prompt;
  return { seed: ctx.seed, persona: ctx.persona, question: question.trim(), expected: ctx.expected };
}

/**
 * What a chairman, voter or reviser answers in a graded run, given the answers it is shown
 * (null: unreadable) and its own: as its `follow` / `keep` / `random` flag says (`follow` when
 * none does; graded-simulation.ts).
 */
export function gradedChoice(
  ctx: SimulationContext,
  item: SimulatedItem,
  shown: readonly (string | null)[],
  own: string = ownAnswer(item, accuracyOf(ctx.flags)),
  fallback: 'follow' | 'keep' = 'follow',
): string {
  return answerToward(behaviourOf(ctx.flags) ?? fallback, shown, own, pickRandom(item, shown));
}

/** A panelist's own answer; in a graded run it ends with a `FINAL ANSWER:` line (acc<N>). */
export const answerResponder: SimulatedResponder = {
  kind: 'answer',
  matches: () => true,
  respond: (ctx) => {
    const text = simulatedAnswer(ctx, ctx.prompt);
    const item = gradedItem(ctx);
    return item ? withFinalAnswer(text, ownAnswer(item, accuracyOf(ctx.flags))) : text;
  },
};

/**
 * In a graded run, the label a voter (or a tiebreaking chairman) names: a response whose final
 * answer is the one it chooses (gradedChoice); undefined when no shown response gives that answer.
 */
export function gradedVote(
  ctx: SimulationContext,
  responses: readonly { label: string; text: string }[],
): string | undefined {
  const item = gradedItem(ctx);
  if (!item) return undefined;
  const answers = responses.map((r) => finalAnswerOf(r.text));
  const chosen = gradedChoice(ctx, item, answers);
  return responses.find((_, i) => sameAnswer(answers[i], chosen))?.label;
}

/** The responses a prompt shows under `--- Response X ---` headers, read from their fences. */
export function labeledBlocks(prompt: string): { label: string; text: string }[] {
  return readFences(prompt).blocks.flatMap((block) => {
    const label = /^--- (Response [A-Z]) ---$/.exec(block.header)?.[1];
    return label && block.kind === 'RESPONSE' ? [{ label, text: block.text.trim() }] : [];
  });
}

/**
 * A voter. It favours the response the whole panel rates best, with personal noise. Flags:
 * `voteA`…`voteF` vote for that label, `self` for its own response, `novote` names no
 * response, `badlabel` votes for a label that does not exist. In a graded run without those, it
 * votes for a response giving the answer `follow` / `keep` / `random` chooses (gradedVote), and as
 * before when none gives it.
 */
export const simulatedVoter = (marker: string): SimulatedResponder => ({
  kind: 'vote',
  matches: (prompt) => prompt.startsWith(marker),
  respond: (ctx) => {
    if (ctx.flags.includes('novote')) return 'These responses are all reasonable; I cannot pick one.';
    if (ctx.flags.includes('badlabel')) return 'None of these is quite right.\n\nVOTE: Response Z';
    const responses = labeledBlocks(ctx.prompt);
    const fixed = /^vote([A-F])$/.exec(ctx.flags.find((f) => /^vote[A-F]$/.test(f)) ?? '')?.[1];
    let choice = fixed ? `Response ${fixed}` : undefined;
    if (!choice && !ctx.flags.includes('self')) choice = gradedVote(ctx, responses);
    if (!choice && ctx.flags.includes('self')) {
      const question = readFences(ctx.prompt).blocks.find((b) => b.kind === 'QUESTION')?.text ?? '';
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
});

/**
 * A responder whose draws do not depend on the containment layer: its random source is seeded as
 * the simulated provider seeds it (seed, model, prompt), but from the prompt without the fences
 * and their notice — the mode document's template. So fencing changed no simulated answer: a
 * seed gives the panel, the votes and the verdicts it gave before.
 */
export const unaffectedByFences = (responder: SimulatedResponder): SimulatedResponder => ({
  ...responder,
  respond: (ctx) =>
    responder.respond({
      ...ctx,
      random: seededRandom(hashString(`${ctx.seed}|${ctx.model}|${withoutFences(ctx.prompt)}`)),
    }),
});

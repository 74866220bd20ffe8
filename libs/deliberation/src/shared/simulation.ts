import { hashString, pick, type SimulatedResponder, type SimulationContext } from '@conclave/llm';

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
    const question = /"([\s\S]*)"/.exec(ctx.prompt)?.[1] ?? '';
    const words = question
      .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
      .split(/\s+/)
      .filter((w) => w.length > 3)
      .slice(0, 4);
    const title = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()).join(' ');
    return `Simulated: ${title || 'Conversation'}`;
  },
};

export const answerResponder: SimulatedResponder = {
  kind: 'answer',
  matches: () => true,
  respond: (ctx) => simulatedAnswer(ctx, ctx.prompt),
};

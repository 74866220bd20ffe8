import {
  hashString,
  pick,
  seededRandom,
  type SimulatedResponder,
  type SimulationContext,
} from '@conclave/llm';
import { readFences } from '../../shared/fence';
import { accuracyOf, numericExpected, ownEstimate, towardMedian } from '../../shared/graded-simulation';
import { gradedItem } from '../../shared/simulation';
import { parseNumber } from './delphi.parse';
import {
  CLASSIFY_PROMPT_MARKER,
  NUMERIC_ROUND1_MARKER,
  QUALITATIVE_ROUND1_MARKER,
  DELPHI_SYNTHESIS_PROMPT_MARKER,
  formatNumber,
} from './delphi.prompts';

const REASONS = [
  'Extrapolating from recent growth rates and adjusting for saturation.',
  'Starting from published figures and discounting for double counting.',
  'Triangulating from two independent estimates that roughly agree.',
  'Taking the historical trend and allowing for a slowdown.',
];
const CONFIDENCES = ['LOW', 'MEDIUM', 'HIGH'];

/** The first line of the fenced question, trimmed: what the panel's baseline is derived from. */
const questionOf = (prompt: string) =>
  (readFences(prompt).blocks.find((b) => b.kind === 'QUESTION')?.text ?? '')
    .split('\n')
    .find((l) => l.trim())
    ?.trim() ?? '';
const blockText = (prompt: string, kind: string): string | null =>
  readFences(prompt).blocks.find((b) => b.kind === kind)?.text ?? null;

/** The panel's shared sense of the answer's size, from the question alone. */
function baseline(question: string, seed: string): number {
  const random = seededRandom(hashString(`${seed}|baseline|${question}`));
  return Math.round(10 ** (2 + Math.floor(random() * 6)) * (1 + random() * 9));
}

function confidenceLine(ctx: SimulationContext): string[] {
  return ctx.flags.includes('noconfidence') ? [] : [`CONFIDENCE: ${pick(CONFIDENCES, ctx.random)}`];
}

/** The ESTIMATE lines; `decimals` (a graded run) writes the value with that many decimals. */
function estimateLines(ctx: SimulationContext, value: number, decimals?: number): string[] {
  const rounded = decimals === undefined ? Math.round(value) : value;
  const written =
    decimals === undefined
      ? rounded.toLocaleString('en-US')
      : value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  const reasoning = `REASONING: ${pick(REASONS, ctx.random)}`;
  if (ctx.flags.includes('nonnumeric')) {
    return [
      'ESTIMATE: too uncertain to say',
      ...confidenceLine(ctx),
      'REASONING: There is no reliable basis for a figure.',
    ];
  }
  if (ctx.flags.includes('noline'))
    return [`My best guess is around ${written}.`, ...confidenceLine(ctx), reasoning];
  const shown = ctx.flags.includes('scale') ? `${(rounded / 1e6).toFixed(1)} million` : written;
  return [`ESTIMATE: ${shown}`, ...confidenceLine(ctx), reasoning];
}

/**
 * The facilitator's classification. Flags `numeric` / `qualitative` force the type; otherwise
 * "how many / how much / what percentage / when"-questions are numeric.
 */
export const classifyResponder: SimulatedResponder = {
  kind: 'classify',
  matches: (prompt) => prompt.startsWith(CLASSIFY_PROMPT_MARKER),
  respond: (ctx) => {
    const question = questionOf(ctx.prompt);
    // A graded run with a numeric expected answer is a numeric question (unless told otherwise).
    const gradedNumeric =
      ctx.expected !== undefined &&
      !ctx.flags.includes('qualitative') &&
      numericExpected(ctx.expected) !== null;
    const numeric =
      ctx.flags.includes('numeric') || gradedNumeric
        ? true
        : ctx.flags.includes('qualitative')
          ? false
          : /\b(how many|how much|what percentage|what share|estimate|what year|when will|how long|how far)\b/i.test(
              question,
            );
    if (numeric) {
      return 'TYPE: NUMERIC\nOPTIONS: N/A\nREASONING: The question asks for a quantity that can be estimated.';
    }
    const pair = /\b([\w-]+)\s+or\s+([\w-]+)/i.exec(question);
    const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);
    const options = pair
      ? [cap(pair[1]), cap(pair[2]), `Hybrid of ${pair[1]} and ${pair[2]}`, 'Neither']
      : ['Yes', 'No', 'It depends on the context'];
    return `TYPE: QUALITATIVE\nOPTIONS: ${options.join(', ')}\nREASONING: The question asks for a choice among alternatives.`;
  },
};

/** `option<K>`: the 1-based option a panelist always answers (`Position K` when none are offered). */
const fixedOption = (ctx: SimulationContext): number | null => {
  const flag = ctx.flags.find((f) => /^option\d+$/.test(f));
  return flag ? Number(flag.slice('option'.length)) : null;
};

const fixedValue = (ctx: SimulationContext): number | null => {
  const flag = ctx.flags.find((f) => /^value-?\d+(\.\d+)?$/.test(f));
  return flag ? Number(flag.slice('value'.length)) : null;
};

/**
 * A panelist's estimate in a graded run with a numeric expected answer (issue 37): round 1 the
 * expected value with the probability its `acc<N>` gives (drawn per item, SIM_SEED and name),
 * otherwise an off value (offEstimate); later rounds 80 % of the way to the panel's median, or its
 * previous estimate with `keep` (`stubborn`, `fixed`). The numeric grader's default tolerance is
 * 0, so right means the expected value exactly. Null when the run is not graded that way.
 */
function gradedEstimate(ctx: SimulationContext, qualitative: boolean): string | null {
  const item = qualitative ? null : gradedItem(ctx);
  const expected = item ? numericExpected(item.expected) : null;
  if (item === null || expected === null) return null;
  const write = (value: number) => estimateLines(ctx, value, expected.decimals).join('\n');
  const own = () => ownEstimate(item, expected, accuracyOf(ctx.flags));
  if (ctx.prompt.startsWith(NUMERIC_ROUND1_MARKER)) return write(own());
  const { outside } = readFences(ctx.prompt);
  if (!outside.includes('YOUR PREVIOUS ESTIMATE:')) return null;
  // The prompt shows values rounded (formatNumber): the expected one is read back exactly.
  const read = (line: RegExp): number | null => {
    const value = parseNumber(line.exec(outside)?.[1] ?? '');
    return value !== null && formatNumber(value) === formatNumber(expected.value) ? expected.value : value;
  };
  const previous = read(/YOUR PREVIOUS ESTIMATE: (.*)/) ?? own();
  const median = read(/- Median: (.*)/) ?? previous;
  const holds = ['keep', 'stubborn', 'fixed'].some((flag) => ctx.flags.includes(flag));
  return write(holds ? previous : towardMedian(previous, median, expected.decimals));
}

/**
 * A panelist. Round 1: spread around a shared baseline. Later rounds: moves most of the way to the
 * panel's mean (or the most common answer), so a panel converges in two or three rounds. Flags:
 * `stubborn` (a far-off answer it never moves from), `fixed` (everyone with it answers the same),
 * `value<N>` (always answers N), `option<K>` (always answers option K of a qualitative question),
 * `nonnumeric`, `noline` (no ESTIMATE: line), `noconfidence`, `scale` ("42.0 million"),
 * `byname` (answers an option by name instead of number).
 */
function respondAsPanelist(ctx: SimulationContext): string {
  const question = questionOf(ctx.prompt);
  const base = baseline(question, ctx.seed);
  const { outside } = readFences(ctx.prompt);
  const qualitative =
    ctx.prompt.startsWith(QUALITATIVE_ROUND1_MARKER) || outside.includes('YOUR PREVIOUS ANSWER:');
  const value = fixedValue(ctx);
  if (value !== null && !qualitative) {
    return [
      `ESTIMATE: ${value}`,
      ...confidenceLine(ctx),
      'REASONING: This figure follows from my own model.',
    ].join('\n');
  }
  const graded = gradedEstimate(ctx, qualitative);
  if (graded !== null) return graded;
  if (ctx.prompt.startsWith(NUMERIC_ROUND1_MARKER)) {
    if (ctx.flags.includes('fixed')) return estimateLines(ctx, base).join('\n');
    if (ctx.flags.includes('stubborn')) return estimateLines(ctx, base * 4).join('\n');
    return estimateLines(ctx, base * (1 + (ctx.random() - 0.5) * 0.8)).join('\n');
  }
  if (outside.includes('YOUR PREVIOUS ESTIMATE:')) {
    const previous = parseNumber(/YOUR PREVIOUS ESTIMATE: (.*)/.exec(outside)?.[1] ?? '') ?? base;
    const mean = parseNumber(/- Mean: (.*)/.exec(outside)?.[1] ?? '') ?? previous;
    if (ctx.flags.includes('stubborn') || ctx.flags.includes('fixed'))
      return estimateLines(ctx, previous).join('\n');
    const moved = previous + (mean - previous) * 0.8 + (ctx.random() - 0.5) * 0.02 * mean;
    return estimateLines(ctx, moved).join('\n');
  }
  const options = [...(blockText(ctx.prompt, 'OPTIONS') ?? '').matchAll(/^(\d+)\. (.+)$/gm)].map((m) => m[2]);
  const answer = (index: number) =>
    ctx.flags.includes('byname') ? (options[index] ?? 'No preference') : String(index + 1);
  const option = fixedOption(ctx);
  if (option !== null) {
    const shown = options.length > 0 ? answer((option - 1) % options.length) : `Position ${option}`;
    return [`ANSWER: ${shown}`, ...confidenceLine(ctx), 'REASONING: This follows from my own view.'].join(
      '\n',
    );
  }
  if (ctx.prompt.startsWith(QUALITATIVE_ROUND1_MARKER)) {
    const index = ctx.flags.includes('fixed')
      ? 0
      : ctx.flags.includes('stubborn')
        ? options.length - 1
        : Math.floor(ctx.random() * Math.min(options.length, 3));
    const shown = options.length > 0 ? answer(index) : 'A cautious middle path';
    return [`ANSWER: ${shown}`, ...confidenceLine(ctx), `REASONING: ${pick(REASONS, ctx.random)}`].join('\n');
  }
  const previous =
    blockText(ctx.prompt, 'ANSWER')?.trim() ?? /YOUR PREVIOUS ANSWER: (.*)/.exec(outside)?.[1]?.trim() ?? '';
  const mode =
    /^\s+(.+?): \d+ participants/.exec(blockText(ctx.prompt, 'DISTRIBUTION') ?? '')?.[1] ?? previous;
  const keep = ctx.flags.includes('stubborn') || ctx.flags.includes('fixed') || ctx.random() < 0.25;
  return [
    `ANSWER: ${keep ? previous : mode}`,
    ...confidenceLine(ctx),
    'REASONING: Weighing the distribution of the panel.',
  ].join('\n');
}

/** Round 1 (kind `estimate`) and later rounds (kind `reestimate`), so a fault can hit only one. */
export const panelistResponder: SimulatedResponder = {
  kind: 'estimate',
  matches: (prompt) =>
    prompt.startsWith(NUMERIC_ROUND1_MARKER) || prompt.startsWith(QUALITATIVE_ROUND1_MARKER),
  respond: respondAsPanelist,
};

export const revisingPanelistResponder: SimulatedResponder = {
  kind: 'reestimate',
  matches: (prompt) => /^DELPHI ROUND \d+ of \d+/.test(prompt),
  respond: respondAsPanelist,
};

export const delphiReportResponder: SimulatedResponder = {
  kind: 'report',
  matches: (prompt) => prompt.startsWith(DELPHI_SYNTHESIS_PROMPT_MARKER),
  respond: (ctx) => {
    const { outside } = readFences(ctx.prompt);
    const final =
      blockText(ctx.prompt, 'ANSWER') ?? /FINAL CONSENSUS VALUE: (.*)/.exec(outside)?.[1] ?? 'unknown';
    const status = /CONVERGENCE STATUS: (.*)/.exec(outside)?.[1] ?? '';
    const rounds = (blockText(ctx.prompt, 'TRAJECTORY')?.match(/^Round \d+:$/gm) ?? []).length;
    return [
      '## Delphi Consensus Report',
      '',
      `[simulated report by ${ctx.model}]`,
      '',
      '### Question',
      questionOf(ctx.prompt),
      '',
      '### Final Consensus',
      `${final} (${status.toLowerCase()} after ${rounds} round${rounds === 1 ? '' : 's'}).`,
      '',
      '### Convergence Analysis',
      'Estimates moved toward the panel aggregate after the first round.',
      '',
      '### Confidence Trajectory',
      'Confidence rose as the spread narrowed.',
      '',
      '### Outlier Analysis',
      status === 'Converged'
        ? 'No persistent outliers.'
        : 'At least one panelist held a distant position throughout.',
      '',
      '### Reliability Assessment',
      status === 'Converged'
        ? 'Reasonably reliable for a small panel.'
        : 'Treat with caution: the panel did not converge.',
    ].join('\n');
  },
};

export const delphiResponders: SimulatedResponder[] = [
  classifyResponder,
  panelistResponder,
  revisingPanelistResponder,
  delphiReportResponder,
];

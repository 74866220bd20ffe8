import type {
  DurationEstimate,
  EstimateAssumptions,
  EstimateFigures,
  EstimatePricing,
  EstimateRange,
  ModelCallEstimate,
} from '@conclave/contracts';
import { hashString, parseSimModel, seededRandom, type ChatMessage } from '@conclave/llm';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '../modes';
import type {
  AnyModeDefinition,
  CallOutcome,
  DeliberationContext,
  HistoryTurn,
  PlannedCall,
  StageRow,
} from '../engine/types';
import { inStoredOrder } from '../engine/stored-order';

/**
 * The planner behind `dryRun=true`: which model calls a deliberation would make, found by running
 * the mode's own plan() and reduce() stage by stage — the functions the engine runs — over
 * answers the simulated panel writes, so the count is the mode's, never a second copy of its rules.
 *
 * Where the number of calls depends on what the models answer (Delphi's rounds, vote's tiebreak),
 * the mode is walked at least twice: once with a panel that agrees (every simulated participant answers the
 * same: Delphi converges in round 1, a vote has a clear winner) and once with a panel that is as
 * divided as it can be (each holds its own distinct answer and never moves: Delphi runs every
 * round, a vote ties) — for Delphi a third time, divided with the question classified as the
 * facilitator classifies it (PanelKind). The walks bound the count. All assume every call succeeds
 * and parses.
 */

/** Prompt tokens are estimated as the prompt's characters ÷ this (the simulated provider's rule too). */
export const CHARS_PER_TOKEN = 4;
/**
 * Completion tokens assumed per call of a model that is not simulated, and per earlier answer a
 * later prompt quotes: at least 1 (an empty answer is a failed call); the most is an estimate, not
 * a bound (a deliberation's calls set no output cap).
 */
export const COMPLETION_TOKENS_PER_CALL: EstimateRange = { min: 1, max: 1000 };
/**
 * A simulated model's answers are known: the walk asks the simulated responders themselves
 * (answerChars). Their lengths vary with the seed and with the answers quoted earlier, so the
 * figures are widened by these fractions: a completion (and a quoted answer) by the first, a whole
 * prompt by the second (for earlier answers a prompt restates rather than quotes, as Delphi's
 * rounds do with the panel's reasons).
 */
export const SIMULATED_COMPLETION_MARGIN = 0.25;
export const SIMULATED_PROMPT_MARGIN = 0.15;
/**
 * What the margins were measured on (plan-estimate.spec.ts, "holds for simulated deliberations"):
 * the largest miss of the unwidened figures, as a fraction of the figure.
 */
export const SIMULATED_MEASURED_ERROR = {
  deliberations: 405,
  promptTokens: 0.117,
  completionTokens: 0.05,
  /** How many of them fell outside the unwidened ranges (widened: none, per model too). */
  outsideUnwidened: 208,
  /**
   * Batches planned by shape (ShapePlanner) as the batch dry run plans them, every item run
   * (batch-estimate.spec.ts, "the ranges hold for simulated batches"): every item, every batch
   * total and every model's total inside its range.
   */
  batches: { batches: 7, items: 42 },
} as const;
/** A model the simulated provider answers (whatever provider is configured). */
export const isSimulated = (model: string): boolean => model.startsWith('sim/');
/** Completion tokens assumed for the title call (a title is a few words). */
export const TITLE_COMPLETION_TOKENS: EstimateRange = { min: 5, max: 30 };
/** The stage name under which the title call is counted (its model_calls rows' stage). */
export const TITLE_STAGE = 'title';
/** No mode has this many stages; a walk that gets here is a bug, not a plan. */
const MAX_STAGES = 64;
/** Earlier answers shorter than this are not looked for in later prompts. */
const MIN_QUOTED_CHARS = 24;

/**
 * `divided-classified`: divided as `divided`, but a Delphi facilitator classifies the question
 * itself (`divided` forces a numeric one): a divided qualitative Delphi spends other tokens than a
 * numeric one, and either may be the most.
 */
export type PanelKind = 'agreeing' | 'divided' | 'divided-classified';

/** One call of a walk. */
export interface WalkedCall {
  stage: string;
  model: string;
  /** Characters of every message the call sends. */
  promptChars: number;
  /** Earlier answers of the walk the prompt quotes, and their characters (replaced by the completion range). */
  quotedAnswers: number;
  quotedChars: number;
  /** The title call: its completion range is TITLE_COMPLETION_TOKENS. */
  title?: boolean;
  /** How often each of PlanInput.countTexts appears in the prompt. */
  textOccurrences?: Record<string, number>;
  /**
   * The characters of the answer the simulated provider may write to this prompt, fewest to most
   * over SIMULATED_VARIANTS (the walk's panel directives and the model's own, several seeds).
   */
  answerChars?: EstimateRange;
}

/** One stage of a walk, for the duration bound. */
export interface WalkedStage {
  stage: string;
  /** Calls the stage makes at once (a seat counted once, however many fallbacks it has). */
  calls: number;
  /** The most models one seat of the stage may ask in turn (1: no fallbacks). */
  longestSeat: number;
  /** The stage's deadline, when its members are gated by one. */
  deadlineMs: number | null;
}

export interface PlanWalk {
  panel: PanelKind;
  calls: WalkedCall[];
  stages: WalkedStage[];
  /** How the walk ended; `fail`: the mode refused even with every call answered (not expected). */
  ending: { kind: 'done' } | { kind: 'fail'; message: string };
}

export interface PlanInput {
  question: string;
  config: unknown;
  history?: HistoryTurn[];
  /** Count the title call (a new conversation, or a batch with generateTitles). */
  title: boolean;
  /** Texts to count in every prompt (WalkedCall.textOccurrences), by name. */
  countTexts?: Record<string, string>;
}

export interface DeliberationPlan {
  walks: PlanWalk[];
  titleModel: string | null;
}

const label = (i: number) => String.fromCharCode(65 + (i % 6));

/** The simulated directives the participant at position `i` of a stage answers with. */
export function panelFlags(panel: PanelKind, i: number): string[] {
  if (panel === 'agreeing') return ['fixed', 'voteA'];
  // Far-apart fixed numbers (a CV above any threshold), distinct options, distinct votes.
  const divided = [`value${10 ** (2 * Math.min(i, 9))}`, `option${i + 1}`, `vote${label(i)}`];
  return panel === 'divided' ? ['numeric', ...divided] : divided;
}

/** The text with every quoted answer cut out. */
function withoutQuoted(text: string, quoted: readonly string[]): string {
  let rest = text;
  for (const answer of quoted) rest = rest.split(answer).join('');
  return rest;
}

function occurrences(
  text: string,
  of: Record<string, string> | undefined,
): Record<string, number> | undefined {
  if (!of) return undefined;
  const counts: Record<string, number> = {};
  for (const [name, needle] of Object.entries(of)) {
    let count = 0;
    for (let at = text.indexOf(needle); needle && at >= 0; at = text.indexOf(needle, at + needle.length))
      count++;
    counts[name] = count;
  }
  return counts;
}

const lastUserPrompt = (messages: readonly ChatMessage[]): string =>
  [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';

/** What the simulated panel answers to a call, with the given directives, whatever model it names. */
function simulatedAnswer(
  call: Pick<PlannedCall, 'model' | 'messages'>,
  flags: string[],
  seed = 'dry-run',
): string {
  const prompt = lastUserPrompt(call.messages);
  const responder = SIMULATED_RESPONDERS.find((r) => r.matches(prompt)) ?? SIMULATED_FALLBACK;
  return responder.respond({
    model: call.model,
    persona: parseSimModel(call.model).persona,
    flags,
    messages: call.messages,
    prompt,
    random: seededRandom(hashString(`${seed}|${call.model}|${prompt}`)),
    seed,
  });
}

/** The seeds a simulated answer's length is sampled over (the real run's SIM_SEED is another). */
const SIMULATED_SEEDS = ['dry-run', 'dry-run-2', 'dry-run-3', 'dry-run-4'];

/**
 * The fewest and most characters the simulated provider answered to this prompt over
 * SIMULATED_SEEDS, with the walk's panel directives and with the model's own (`sim/a:voteB`), and
 * the format-ignoring answer when the model may give one (`malformed`).
 */
function simulatedAnswerChars(
  call: Pick<PlannedCall, 'model' | 'messages'>,
  panelFlagsOfCall: string[] | null,
): EstimateRange {
  const own = parseSimModel(call.model);
  const lengths: number[] = [];
  // The title call's answer is drawn from the question alone: one seed tells it.
  const seeds = panelFlagsOfCall ? SIMULATED_SEEDS : SIMULATED_SEEDS.slice(0, 1);
  for (const flags of panelFlagsOfCall ? [panelFlagsOfCall, own.flags] : [own.flags])
    for (const seed of seeds) lengths.push(simulatedAnswer(call, flags, seed).length);
  if (own.faults.some((f) => f.fault === 'malformed')) lengths.push(MALFORMED_ANSWER_CHARS);
  return rangeOf(Math.min(...lengths), Math.max(...lengths));
}
/** The simulated provider's answer for a `malformed` directive (libs/llm simulated.provider.ts). */
const MALFORMED_ANSWER_CHARS = 141;

/** Walks a deliberation from its first stage to its end with the given panel. Pure. */
export function walkPlan(definition: AnyModeDefinition, input: PlanInput, panel: PanelKind): PlanWalk {
  const rows: StageRow[] = [];
  const outcomes: Record<string, CallOutcome[]> = {};
  const answers: string[] = [];
  const calls: WalkedCall[] = [];
  const stages: WalkedStage[] = [];
  let stage = definition.firstStage;
  for (let n = 0; n < MAX_STAGES; n++) {
    const ctx: DeliberationContext<unknown> = {
      messageId: 'dry-run',
      conversationId: 'dry-run',
      question: input.question,
      config: input.config,
      history: input.history ?? [],
      rows: [...rows],
      outcomes: { ...outcomes },
      elapsedMs: 0,
      deliberationCapMs: Number.POSITIVE_INFINITY,
    };
    const planned = definition.plan(stage, ctx);
    const settled: CallOutcome[] = planned.map((call, i) => ({
      ok: true,
      key: call.key,
      model: call.model,
      content: simulatedAnswer(call, panelFlags(panel, i)),
      servedModel: call.model,
      promptTokens: null,
      completionTokens: null,
      costUsd: null,
      simulated: true,
      responseTimeMs: 0,
      finishReason: 'stop',
    }));
    // The most a seat may cost: the divided walk (the upper bound) asks every fallback in turn,
    // as if each model before it failed; the agreeing walk (the lower bound) asks none.
    const asked = planned.flatMap((call, i) =>
      (panel === 'agreeing' ? [call] : [call, ...(call.fallbacks ?? [])]).map((c) => ({ call: c, i })),
    );
    for (const { call, i } of asked) {
      const text = call.messages.map((m) => m.content).join('\n');
      const quoted = answers.filter((a) => a.length >= MIN_QUOTED_CHARS && text.includes(a));
      calls.push({
        stage,
        model: call.model,
        promptChars: call.messages.reduce((sum, m) => sum + m.content.length, 0),
        quotedAnswers: quoted.length,
        quotedChars: quoted.reduce((sum, a) => sum + a.length, 0),
        // Only the prompt's own text: an earlier answer it quotes is counted as an answer (the
        // item's real answers restate its question at most in part, never the stand-in whole).
        ...(input.countTexts
          ? { textOccurrences: occurrences(withoutQuoted(text, quoted), input.countTexts) }
          : {}),
        ...(isSimulated(call.model) ? { answerChars: simulatedAnswerChars(call, panelFlags(panel, i)) } : {}),
      });
    }
    if (planned.length > 0) {
      stages.push({
        stage,
        calls: planned.length,
        longestSeat: Math.max(...planned.map((call) => 1 + (call.fallbacks?.length ?? 0))),
        deadlineMs: definition.gate?.(stage, ctx, planned)?.deadlineMs ?? null,
      });
    }
    outcomes[stage] = settled;
    const reduction = definition.reduce(stage, ctx, settled);
    // In the order the store loads them.
    rows.splice(0, rows.length, ...inStoredOrder([...rows, ...reduction.rows]));
    for (const outcome of settled) if (outcome.ok) answers.push(outcome.content);
    const { transition } = reduction;
    if (transition.kind === 'next') {
      stage = transition.stage;
      continue;
    }
    return {
      panel,
      calls,
      stages,
      ending: transition.kind === 'done' ? { kind: 'done' } : { kind: 'fail', message: transition.message },
    };
  }
  throw new Error(`${definition.mode}: the plan did not end within ${MAX_STAGES} stages`);
}

/** The title call a new conversation makes, as a walked call. */
function titleCallOf(definition: AnyModeDefinition, input: PlanInput): WalkedCall {
  const { model, messages } = definition.titleCall({
    messageId: 'dry-run',
    conversationId: 'dry-run',
    question: input.question,
    config: input.config,
    history: input.history ?? [],
    rows: [],
    outcomes: {},
    elapsedMs: 0,
    deliberationCapMs: Number.POSITIVE_INFINITY,
  });
  return {
    stage: TITLE_STAGE,
    model,
    promptChars: messages.reduce((sum, m) => sum + m.content.length, 0),
    quotedAnswers: 0,
    quotedChars: 0,
    title: true,
    ...(isSimulated(model) ? { answerChars: simulatedAnswerChars({ model, messages }, null) } : {}),
  };
}

/** The walks of a deliberation, with its title call when counted. Pure. */
export function planDeliberation(definition: AnyModeDefinition, input: PlanInput): DeliberationPlan {
  const titleCall = input.title ? titleCallOf(definition, input) : null;
  // Only Delphi's facilitator reads the `numeric` directive: the third walk differs for it alone.
  const panels: PanelKind[] =
    definition.mode === 'delphi' ? ['agreeing', 'divided', 'divided-classified'] : ['agreeing', 'divided'];
  const walks = panels.map((panel) => {
    const walk = walkPlan(definition, input, panel);
    return titleCall ? { ...walk, calls: [...walk.calls, titleCall] } : walk;
  });
  return { walks, titleModel: titleCall?.model ?? null };
}

/** The config fields that are an item's own text (a batch's CSV columns besides `question`). */
const CONFIG_TEXT_FIELDS = ['content', 'originalQuestion'] as const;
/** Stands in for an item's text while its shape is walked: found in a prompt without doubt. */
const sentinel = (field: string) => `[[dry-run ${field} 7f3a9c]]`;

/**
 * Plans many deliberations (a batch's items) fast: items that differ only in their texts (the
 * question, jury's content and original question) make the same calls, so each shape (mode,
 * config) is walked once, with stand-in texts, and an item's prompts are that walk's with its
 * own texts' lengths in place of the stand-ins'. The title call (which may shorten a text) is
 * planned for each item itself.
 */
export class ShapePlanner {
  private readonly shapes = new Map<string, DeliberationPlan>();

  /** How many distinct shapes were walked. */
  get walked(): number {
    return this.shapes.size;
  }

  plan(definition: AnyModeDefinition, input: PlanInput): DeliberationPlan {
    const config = (typeof input.config === 'object' && input.config !== null ? input.config : {}) as Record<
      string,
      unknown
    >;
    const texts: Record<string, string> = { question: input.question };
    const shapeConfig: Record<string, unknown> = { ...config };
    for (const field of CONFIG_TEXT_FIELDS) {
      const value = config[field];
      if (typeof value === 'string') {
        texts[field] = value;
        shapeConfig[field] = sentinel(field);
      }
    }
    const key = JSON.stringify([definition.mode, shapeConfig]);
    let shape = this.shapes.get(key);
    if (!shape) {
      const stand = Object.fromEntries(Object.keys(texts).map((field) => [field, sentinel(field)]));
      shape = planDeliberation(definition, {
        question: stand.question,
        config: shapeConfig,
        title: false,
        countTexts: stand,
      });
      this.shapes.set(key, shape);
    }
    const delta = (call: WalkedCall) =>
      Object.entries(call.textOccurrences ?? {}).reduce(
        (sum, [field, times]) => sum + times * ((texts[field]?.length ?? 0) - sentinel(field).length),
        0,
      );
    const title = input.title ? titleCallOf(definition, input) : null;
    return {
      titleModel: title?.model ?? null,
      walks: shape.walks.map((walk) => ({
        ...walk,
        calls: [
          ...walk.calls.map((call) => ({ ...call, promptChars: call.promptChars + delta(call) })),
          ...(title ? [title] : []),
        ],
      })),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// From walks to counts, tokens and dollars

/** A model's price: known (per million tokens, zero for simulated ones), or unknown with the reason. */
export type ModelPrice =
  { known: true; pricing: EstimatePricing; note: string | null } | { known: false; note: string };

export const rangeOf = (min: number, max: number): EstimateRange => ({ min, max });
const ZERO: EstimateRange = { min: 0, max: 0 };
const addRanges = (a: EstimateRange, b: EstimateRange): EstimateRange => ({
  min: a.min + b.min,
  max: a.max + b.max,
});
/** Dollars to a tenth of a millionth, so sums of small prices read cleanly. */
const dollars = (value: number) => Math.round(value * 1e7) / 1e7;

/** Prompt and completion tokens of one call, low and high. */
function tokensOf(call: WalkedCall): { prompt: EstimateRange; completion: EstimateRange } {
  if (call.answerChars) {
    const own = Math.max(0, call.promptChars - call.quotedChars) / CHARS_PER_TOKEN;
    const quoted = call.quotedChars / CHARS_PER_TOKEN;
    const c = SIMULATED_COMPLETION_MARGIN;
    const p = SIMULATED_PROMPT_MARGIN;
    return {
      prompt: rangeOf(
        Math.floor((own + quoted * (1 - c)) * (1 - p)),
        Math.ceil((own + quoted * (1 + c)) * (1 + p)),
      ),
      completion: rangeOf(
        Math.max(1, Math.floor((call.answerChars.min / CHARS_PER_TOKEN) * (1 - c))),
        Math.ceil((call.answerChars.max / CHARS_PER_TOKEN) * (1 + c)),
      ),
    };
  }
  const own = Math.ceil(Math.max(0, call.promptChars - call.quotedChars) / CHARS_PER_TOKEN);
  const completion = call.title ? TITLE_COMPLETION_TOKENS : COMPLETION_TOKENS_PER_CALL;
  return {
    prompt: rangeOf(
      own + call.quotedAnswers * COMPLETION_TOKENS_PER_CALL.min,
      own + call.quotedAnswers * COMPLETION_TOKENS_PER_CALL.max,
    ),
    completion,
  };
}

/** One walk's figures per model: calls per stage, tokens (low, high) and cost (low, high). */
interface WalkModelTotals {
  calls: number;
  stages: Map<string, number>;
  prompt: EstimateRange;
  completion: EstimateRange;
}

function totalsOfWalk(walk: PlanWalk, stageKey: (stage: string) => string): Map<string, WalkModelTotals> {
  const byModel = new Map<string, WalkModelTotals>();
  for (const call of walk.calls) {
    const totals = byModel.get(call.model) ?? { calls: 0, stages: new Map(), prompt: ZERO, completion: ZERO };
    const key = stageKey(call.stage);
    const tokens = tokensOf(call);
    totals.calls += 1;
    totals.stages.set(key, (totals.stages.get(key) ?? 0) + 1);
    totals.prompt = addRanges(totals.prompt, tokens.prompt);
    totals.completion = addRanges(totals.completion, tokens.completion);
    byModel.set(call.model, totals);
  }
  return byModel;
}

const costOf = (pricing: EstimatePricing, prompt: number, completion: number) =>
  (prompt * pricing.promptPerMillionUsd + completion * pricing.completionPerMillionUsd) / 1e6;

/** What one deliberation (or the sum of several) plans: the figures its estimate states. */
export type PlanFigures = EstimateFigures;

/**
 * The figures of one deliberation: each is the least over its walks (low token and price
 * assumptions) to the most (high ones). `stageKey` names a stage in the output (a batch prefixes
 * the mode).
 */
export function figuresOfPlan(
  plan: DeliberationPlan,
  priceOf: (model: string) => ModelPrice,
  stageKey: (stage: string) => string = (stage) => stage,
): PlanFigures {
  const perWalk = plan.walks.map((walk) => totalsOfWalk(walk, stageKey));
  const models = [...new Set(plan.walks.flatMap((w) => w.calls.map((c) => c.model)))];
  const stageOrder = [...new Set(plan.walks.flatMap((w) => w.calls.map((c) => stageKey(c.stage))))];
  // Stages in the order the longest walk runs them.
  const longest = [...plan.walks].sort((a, b) => b.calls.length - a.calls.length)[0];
  const ordered = [...new Set([...(longest?.calls.map((c) => stageKey(c.stage)) ?? []), ...stageOrder])];
  const span = (values: number[]): EstimateRange => rangeOf(Math.min(...values), Math.max(...values));

  const modelEstimates: ModelCallEstimate[] = models.map((model) => {
    const of = (walk: Map<string, WalkModelTotals>) => walk.get(model);
    const stages: Record<string, EstimateRange> = {};
    for (const stage of ordered) {
      const counts = perWalk.map((w) => of(w)?.stages.get(stage) ?? 0);
      if (counts.some((c) => c > 0)) stages[stage] = span(counts);
    }
    const price = priceOf(model);
    const lows = perWalk.map((w) => ({
      calls: of(w)?.calls ?? 0,
      prompt: of(w)?.prompt.min ?? 0,
      completion: of(w)?.completion.min ?? 0,
    }));
    const highs = perWalk.map((w) => ({
      calls: of(w)?.calls ?? 0,
      prompt: of(w)?.prompt.max ?? 0,
      completion: of(w)?.completion.max ?? 0,
    }));
    return {
      model,
      calls: span(lows.map((l) => l.calls)),
      stages,
      promptTokens: rangeOf(Math.min(...lows.map((l) => l.prompt)), Math.max(...highs.map((h) => h.prompt))),
      completionTokens: rangeOf(
        Math.min(...lows.map((l) => l.completion)),
        Math.max(...highs.map((h) => h.completion)),
      ),
      pricing: price.known ? price.pricing : null,
      pricingNote: price.note,
      costUsd: price.known
        ? rangeOf(
            dollars(Math.min(...lows.map((l) => costOf(price.pricing, l.prompt, l.completion)))),
            dollars(Math.max(...highs.map((h) => costOf(price.pricing, h.prompt, h.completion)))),
          )
        : null,
    };
  });

  // Totals per walk first (a walk's models run together), then the range over walks.
  const walkTotal = (pick: (t: WalkModelTotals, model: string) => number) =>
    perWalk.map((w) => [...w.entries()].reduce((sum, [model, t]) => sum + pick(t, model), 0));
  const prices = new Map(models.map((m) => [m, priceOf(m)]));
  const knownCost = (t: WalkModelTotals, model: string, high: boolean) => {
    const price = prices.get(model);
    if (!price?.known) return 0;
    return high
      ? costOf(price.pricing, t.prompt.max, t.completion.max)
      : costOf(price.pricing, t.prompt.min, t.completion.min);
  };
  const stages: Record<string, EstimateRange> = {};
  for (const stage of ordered) {
    stages[stage] = span(
      perWalk.map((w) => [...w.values()].reduce((sum, t) => sum + (t.stages.get(stage) ?? 0), 0)),
    );
  }
  const unpricedModels = models.filter((m) => !prices.get(m)?.known);
  const knownCostUsd = rangeOf(
    dollars(Math.min(...walkTotal((t, m) => knownCost(t, m, false)))),
    dollars(Math.max(...walkTotal((t, m) => knownCost(t, m, true)))),
  );
  return {
    calls: span(walkTotal((t) => t.calls)),
    stages,
    models: modelEstimates,
    promptTokens: rangeOf(
      Math.min(...walkTotal((t) => t.prompt.min)),
      Math.max(...walkTotal((t) => t.prompt.max)),
    ),
    completionTokens: rangeOf(
      Math.min(...walkTotal((t) => t.completion.min)),
      Math.max(...walkTotal((t) => t.completion.max)),
    ),
    costUsd: unpricedModels.length === 0 ? knownCostUsd : null,
    knownCostUsd,
    unpricedModels,
  };
}

/** Adds one deliberation's figures into a running total (a batch's items). */
export function addFigures(total: PlanFigures | null, item: PlanFigures): PlanFigures {
  if (!total) return structuredClone(item);
  const models = new Map(total.models.map((m) => [m.model, m]));
  for (const m of item.models) {
    const into = models.get(m.model);
    if (!into) {
      models.set(m.model, structuredClone(m));
      continue;
    }
    into.calls = addRanges(into.calls, m.calls);
    for (const [stage, range] of Object.entries(m.stages))
      into.stages[stage] = addRanges(into.stages[stage] ?? ZERO, range);
    into.promptTokens = addRanges(into.promptTokens, m.promptTokens);
    into.completionTokens = addRanges(into.completionTokens, m.completionTokens);
    into.costUsd = into.costUsd && m.costUsd ? dollarRange(addRanges(into.costUsd, m.costUsd)) : null;
  }
  const stages = { ...total.stages };
  for (const [stage, range] of Object.entries(item.stages))
    stages[stage] = addRanges(stages[stage] ?? ZERO, range);
  const knownCostUsd = dollarRange(addRanges(total.knownCostUsd, item.knownCostUsd));
  const unpricedModels = [...new Set([...total.unpricedModels, ...item.unpricedModels])];
  return {
    calls: addRanges(total.calls, item.calls),
    stages,
    models: [...models.values()],
    promptTokens: addRanges(total.promptTokens, item.promptTokens),
    completionTokens: addRanges(total.completionTokens, item.completionTokens),
    costUsd: unpricedModels.length === 0 ? knownCostUsd : null,
    knownCostUsd,
    unpricedModels,
  };
}

const dollarRange = (r: EstimateRange): EstimateRange => rangeOf(dollars(r.min), dollars(r.max));

/** Stages whose count differs between the walks, worded: `round_3: 0–5 calls`. */
export function variableStages(figures: Pick<PlanFigures, 'stages'>): string[] {
  return Object.entries(figures.stages)
    .filter(([, r]) => r.min !== r.max)
    .map(
      ([stage, r]) =>
        `${stage}: ${r.min}–${r.max} calls, depending on the answers (agreeing panel: fewest; divided panel: most)`,
    );
}

/**
 * How long the model calls of a plan may take, from its walks (the longest): every stage waits for
 * its slowest call, each call bounded by the mode's per-call timeout, and a seat with fallbacks
 * by that timeout once per model it may ask. With a stage deadline, a stage of members is bounded
 * by the deadline too, once the mode's minimum has answered by then. Capped by the
 * whole-deliberation cap where the mode enforces one. Provider retries and queueing are not counted.
 */
export function durationBound(
  definition: AnyModeDefinition,
  config: unknown,
  plan: Pick<DeliberationPlan, 'walks'>,
  deliberationCapMs: number,
): DurationEstimate {
  const timeoutMs = definition.timeoutMs(config);
  const cap = definition.enforcesDeliberationCap ? deliberationCapMs : Number.POSITIVE_INFINITY;
  const longest = (withDeadline: boolean) =>
    Math.max(
      0,
      ...plan.walks.map((walk) =>
        walk.stages.reduce((sum, stage) => {
          const perCall =
            withDeadline && stage.deadlineMs !== null ? Math.min(stage.deadlineMs, timeoutMs) : timeoutMs;
          return sum + perCall * stage.longestSeat;
        }, 0),
      ),
    );
  const maxMs = Math.min(longest(false), cap);
  const gated = plan.walks.some((walk) => walk.stages.some((stage) => stage.deadlineMs !== null));
  return {
    maxMs,
    withDeadlinesMs: gated ? Math.min(longest(true), cap) : null,
    perCallTimeoutMs: timeoutMs,
    capMs: Number.isFinite(cap) ? cap : null,
  };
}

export const ESTIMATE_ASSUMPTIONS: EstimateAssumptions = {
  charsPerToken: CHARS_PER_TOKEN,
  completionTokensPerCall: COMPLETION_TOKENS_PER_CALL,
  titleCompletionTokens: TITLE_COMPLETION_TOKENS,
  simulated: {
    completionMargin: SIMULATED_COMPLETION_MARGIN,
    promptMargin: SIMULATED_PROMPT_MARGIN,
    measured: {
      deliberations: SIMULATED_MEASURED_ERROR.deliberations,
      promptTokensError: SIMULATED_MEASURED_ERROR.promptTokens,
      completionTokensError: SIMULATED_MEASURED_ERROR.completionTokens,
      outsideRange: 0,
      batches: { ...SIMULATED_MEASURED_ERROR.batches, outsideRange: 0 },
    },
  },
  notes: [
    `Prompt tokens: the characters of each planned prompt ÷ ${CHARS_PER_TOKEN}; an earlier answer a later prompt quotes counts as ${COMPLETION_TOKENS_PER_CALL.min}–${COMPLETION_TOKENS_PER_CALL.max} tokens (a simulated model's: its simulated length, see below).`,
    `Completion tokens of a model that is not simulated: ${COMPLETION_TOKENS_PER_CALL.min}–${COMPLETION_TOKENS_PER_CALL.max} per call (${TITLE_COMPLETION_TOKENS.min}–${TITLE_COMPLETION_TOKENS.max} for the title). The least is a bound; the most is an estimate, not a bound: deliberation calls set no output cap, so a longer answer (and a prompt quoting it) goes above it. Not measured against real providers.`,
    `Simulated models (sim/…): the planner asks the simulated provider's own responders, so prompt and completion tokens come from the answers it writes (over ${SIMULATED_SEEDS.length} seeds, with the walk's directives and the model's own), widened by ${SIMULATED_COMPLETION_MARGIN * 100} % per answer and ${SIMULATED_PROMPT_MARGIN * 100} % per prompt. Measured on ${SIMULATED_MEASURED_ERROR.deliberations} simulated deliberations of every mode (agreeing and divided panels, Delphi of both types run to the last round, vote ties): unwidened, ${SIMULATED_MEASURED_ERROR.outsideUnwidened} fell outside, the largest miss ${Math.round(SIMULATED_MEASURED_ERROR.promptTokens * 1000) / 10} % (prompt tokens) and ${Math.round(SIMULATED_MEASURED_ERROR.completionTokens * 1000) / 10} % (completion tokens); widened, none did, per model too. An estimate with that margin, not a proof: a roster or question unlike these may still fall outside. Calls that fail (fail, timeout directives) are counted as if answered.`,
    `A batch's items are planned by shape (one walk per mode and options, with stand-in texts, each item's own question and content put in by length): the simulated answers are those written to the stand-ins, inside the margins above. Measured on ${SIMULATED_MEASURED_ERROR.batches.batches} simulated batches of every mode (${SIMULATED_MEASURED_ERROR.batches.items} items, questions of 2 to some 400 characters, jury contents up to 1 000): every item, every batch total and every model's total inside its range. An estimate with that margin, not a proof.`,
    "Calls come from the mode's own plan, assuming every call succeeds; failed calls are not retried by the plan, transient errors retried by the provider are not counted.",
    'Where the count depends on the answers (Delphi rounds, a vote tiebreak) the range runs from a panel that agrees to one that never does.',
    'Fallbacks (chairmanFallbacks, foremanFallbacks, facilitatorFallbacks): the least asks none of them, the most asks every one, as if each model before it failed. A quorum or deadline may cut calls: the figures count them all.',
    "Duration: each stage waits for its slowest call, bounded by the per-call timeout (a seat: once per model it may ask); with stageDeadlineMs, a stage of members is bounded by its deadline once the mode's minimum answered.",
    'Prices: the model catalogue, per million tokens; simulated models cost nothing; an unknown price is null with the reason.',
  ],
};

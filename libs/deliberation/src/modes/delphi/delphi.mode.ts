import type {
  Confidence,
  DelphiClassification,
  DelphiConfig,
  DelphiEstimate,
  DelphiEstimateSummary,
  DelphiReport,
  DelphiResult,
  DelphiRound,
  NumericStats,
  QualitativeStats,
} from '@conclave/contracts';
import { failure, modeEvent, NO_USAGE } from '../../engine/reductions';
import { callRow, openingEvent, promptCall, soleCallFailure, usageOfOutcome } from '../../shared/calls';
import { participantKey } from '../../shared/participants';
import type {
  CallOutcome,
  DeliberationContext,
  PlannedCall,
  StageReduction,
  StageRow,
} from '../../engine/types';
import { buildTitlePrompt } from '../../shared/title';
import { memberGate, withFallbacks, type CountsAsAnswered } from '../../engine/quorum';
import { defineMode, type StageTable } from '../define-mode';
import { DELPHI_MIN_VALID, delphiConfig } from './delphi.config';
import { delphiFacts } from './delphi.facts';
import {
  parseAnswer,
  parseClassification,
  parseConfidence,
  parseEstimate,
  parseReasoning,
} from './delphi.parse';
import {
  buildClassifyPrompt,
  buildNumericRound1Prompt,
  buildNumericRoundPrompt,
  buildQualitativeRound1Prompt,
  buildQualitativeRoundPrompt,
  buildDelphiSynthesisPrompt,
  formatNumber,
} from './delphi.prompts';
import {
  confidenceInterval95,
  hasConverged,
  isNumericStats,
  numericStats,
  qualitativeStats,
} from './delphi.stats';

type Ctx = DeliberationContext<DelphiConfig>;
/** `round` runs every estimation round: `round_1`, `round_2`, … */
type DelphiStage = 'classify' | 'round' | 'synthesis';
type Stats = NumericStats | QualitativeStats;

const SYNTHESIS_ORDER = 99;
const FACILITATOR_KEY = 'facilitator';

const roundOf = (stage: string): number => Number(/^round_(\d+)$/.exec(stage)?.[1] ?? NaN);
const stageOf = (stage: string): DelphiStage | undefined => {
  if (stage === 'classify' || stage === 'synthesis') return stage;
  return Number.isInteger(roundOf(stage)) ? 'round' : undefined;
};

/** What the question is, from the request's override or the facilitator's classification. */
export function classificationOf(
  config: DelphiConfig,
  outcome: CallOutcome | undefined,
): DelphiClassification {
  if (config.questionType === 'numeric') {
    return { type: 'numeric', options: null, reasoning: 'Question type set by the request.' };
  }
  if (config.questionType === 'qualitative' && config.options) {
    return {
      type: 'qualitative',
      options: config.options,
      reasoning: 'Question type and options set by the request.',
    };
  }
  const parsed = outcome?.ok ? parseClassification(outcome.content) : null;
  if (config.questionType === 'qualitative') {
    // A facilitator that calls the question NUMERIC reasons about a quantity: that reasoning
    // would contradict the type the request set, so only its options (if any) are kept.
    if (parsed?.type === 'qualitative') {
      return { type: 'qualitative', options: parsed.options ?? null, reasoning: parsed.reasoning };
    }
    return {
      type: 'qualitative',
      options: null,
      reasoning: parsed
        ? 'Question type set by the request; the facilitator judged it numeric and suggested no options.'
        : 'Question type set by the request; the facilitator could not suggest options.',
    };
  }
  if (!parsed) {
    const why = outcome && !outcome.ok ? outcome.error : 'its answer could not be read';
    return {
      type: 'qualitative',
      options: config.options,
      reasoning: `Classification failed (${why}); falling back to qualitative.`,
    };
  }
  if (parsed.type === 'numeric') return parsed;
  return { ...parsed, options: config.options ?? parsed.options };
}

export const needsClassificationCall = (config: DelphiConfig): boolean =>
  config.questionType === null || (config.questionType === 'qualitative' && !config.options);

const classificationIn = (ctx: Ctx) => classificationOf(ctx.config, ctx.outcomes.classify?.[0]);

interface EstimateData {
  round: number;
  type: 'numeric' | 'qualitative';
  estimate?: number | null;
  answer?: string | null;
  confidence: Confidence;
  previousEstimate?: number | null;
  previousAnswer?: string | null;
  changed: boolean;
  reasoning: string;
  carriedForward?: boolean;
}

interface PanelistAnswer {
  participant: number;
  model: string;
  content: string;
  data: EstimateData;
  responseTimeMs: number;
}

const valueOf = (d: EstimateData): number | string | null | undefined =>
  d.type === 'numeric' ? d.estimate : d.answer;

function roundAnswers(rows: readonly StageRow[], round: number): PanelistAnswer[] {
  return rows
    .filter((r) => r.stageType === `round_${round}`)
    .sort((a, b) => (a.participant ?? 0) - (b.participant ?? 0))
    .map((r) => ({
      participant: r.participant ?? 0,
      model: r.model ?? '',
      content: r.content,
      data: r.parsedData as unknown as EstimateData,
      responseTimeMs: r.responseTimeMs ?? 0,
    }));
}

type StoredStats = Stats & { round: number; type: 'stats'; converged: boolean };

const roundStats = (rows: readonly StageRow[], round: number): StoredStats | undefined =>
  rows.find((r) => r.stageType === `round_${round}_stats`)?.parsedData as StoredStats | undefined;

function completedRounds(rows: readonly StageRow[]): number {
  let round = 0;
  while (roundStats(rows, round + 1)) round += 1;
  return round;
}

/** Strips the stored bookkeeping keys, leaving the stats of 05-delphi.md. */
function statsOnly(stored: StoredStats): Stats {
  const { round: _r, type: _t, converged: _c, ...stats } = stored;
  return stats as Stats;
}

function describeStats(round: number, stats: Stats): string {
  if (isNumericStats(stats)) {
    return (
      `Round ${round} Statistics: Mean=${formatNumber(stats.mean)} Median=${formatNumber(stats.median)} ` +
      `StdDev=${formatNumber(stats.stdDev)} CV=${stats.cv === null ? 'undefined' : stats.cv.toFixed(3)} ` +
      `Range=${formatNumber(stats.min)}-${formatNumber(stats.max)}`
    );
  }
  const shares = stats.distribution.map((d) => `${d.answer} ${d.percentage}%`).join(', ');
  return `Round ${round} Statistics: ${shares}. Agreement: ${stats.agreementPercentage}%.`;
}

function planRound(round: number, ctx: Ctx): PlannedCall[] {
  const { config } = ctx;
  const classification = classificationIn(ctx);
  const call = (participant: number, content: string): PlannedCall => ({
    key: participantKey(participant),
    // anonymous during the run (00-shared.md §4): the 1-based participant index
    participant: participant + 1,
    model: config.panelistModels[participant],
    messages: [{ role: 'user', content }],
  });
  if (round === 1) {
    const prompt =
      classification.type === 'numeric'
        ? buildNumericRound1Prompt(ctx.question)
        : buildQualitativeRound1Prompt(ctx.question, classification.options);
    return config.panelistModels.map((_, i) => call(i, prompt));
  }
  const previous = roundAnswers(ctx.rows, round - 1);
  const stored = roundStats(ctx.rows, round - 1);
  if (!stored) throw new Error(`round ${round} reached without the statistics of round ${round - 1}`);
  const stats = statsOnly(stored);
  const participantCount = previous.filter((p) => valueOf(p.data) != null).length;
  // Each panelist sees the aggregates and its own previous answer, nothing of anyone else's.
  return previous.map((p) =>
    call(
      p.participant,
      isNumericStats(stats)
        ? buildNumericRoundPrompt({
            round,
            maxRounds: config.maxRounds,
            userQuery: ctx.question,
            previousEstimate: p.data.estimate ?? null,
            previousConfidence: p.data.confidence,
            participantCount,
            stats,
          })
        : buildQualitativeRoundPrompt({
            round,
            maxRounds: config.maxRounds,
            userQuery: ctx.question,
            previousAnswer: p.data.answer ?? null,
            participantCount,
            stats,
          }),
    ),
  );
}

/** An answer the round's statistics use: its estimate (or qualitative answer) parses. */
function readsEstimate(ctx: Ctx): CountsAsAnswered {
  const classification = classificationIn(ctx);
  return classification.type === 'numeric'
    ? (outcome) => parseEstimate(outcome.content).estimate != null
    : (outcome) => parseAnswer(outcome.content, classification.options) != null;
}

function reduceRound(round: number, ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const { config } = ctx;
  const classification = classificationIn(ctx);
  const numeric = classification.type === 'numeric';
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  const previous = round === 1 ? [] : roundAnswers(ctx.rows, round - 1);
  const previousOf = new Map(previous.map((p) => [p.participant, p]));
  const participants =
    round === 1 ? config.panelistModels.map((_, i) => i) : previous.map((p) => p.participant);

  const answers: PanelistAnswer[] = [];
  for (const participant of participants) {
    const outcome = byKey.get(participantKey(participant));
    const before = previousOf.get(participant);
    const model = config.panelistModels[participant];
    if (!outcome?.ok) {
      // Round 1: excluded from every later round. Later: the previous answer stands, unchanged.
      if (before) {
        answers.push({
          ...before,
          responseTimeMs: outcome?.responseTimeMs ?? 0,
          data: {
            ...before.data,
            round,
            previousEstimate: numeric ? (before.data.estimate ?? null) : undefined,
            previousAnswer: numeric ? undefined : (before.data.answer ?? null),
            changed: false,
            carriedForward: true,
          },
        });
      }
      continue;
    }
    const { confidence } = parseConfidence(outcome.content);
    const reasoning = parseReasoning(outcome.content);
    const data: EstimateData = numeric
      ? {
          round,
          type: 'numeric',
          estimate: parseEstimate(outcome.content).estimate,
          confidence,
          previousEstimate: before?.data.estimate ?? null,
          changed: false,
          reasoning,
        }
      : {
          round,
          type: 'qualitative',
          answer: parseAnswer(outcome.content, classification.options),
          confidence,
          previousAnswer: before?.data.answer ?? null,
          changed: false,
          reasoning,
        };
    const now = valueOf(data);
    const then = before ? valueOf(before.data) : null;
    data.changed = round > 1 && now != null && then != null && now !== then;
    answers.push({
      participant,
      model,
      content: outcome.content,
      data,
      responseTimeMs: outcome.responseTimeMs,
    });
  }

  if (round === 1 && answers.length === 0) return failure('All panelists failed in round 1.');
  const valid = answers.filter((a) => valueOf(a.data) != null);
  if (valid.length < DELPHI_MIN_VALID) {
    return failure(
      `Only ${valid.length} valid ${numeric ? 'estimate' : 'answer'}${valid.length === 1 ? '' : 's'} in round ${round}; ` +
        `a Delphi round needs at least ${DELPHI_MIN_VALID}.`,
    );
  }
  const confidences = valid.map((a) => a.data.confidence);
  const stats: Stats = numeric
    ? numericStats(
        valid.map((a) => a.data.estimate as number),
        confidences,
      )
    : qualitativeStats(
        valid.map((a) => a.data.answer as string),
        confidences,
        classification.options ?? [],
      );
  const converged = hasConverged(stats, {
    numeric: config.numericConvergenceThreshold,
    qualitative: config.qualitativeConvergenceThreshold,
  });

  const rows: StageRow[] = [];
  if (round === 1) {
    const classifyOutcome = ctx.outcomes.classify?.[0];
    rows.push({
      stageType: 'classify',
      stageOrder: 0,
      model: classifyOutcome ? config.facilitatorModel : null,
      role: 'facilitator',
      content: classifyOutcome?.ok ? classifyOutcome.content : classification.reasoning,
      parsedData: { ...classification },
      ...usageOfOutcome(classifyOutcome),
    });
  }
  for (const answer of answers) {
    const outcome = byKey.get(participantKey(answer.participant));
    rows.push({
      stageType: `round_${round}`,
      stageOrder: 2 * round - 1,
      model: answer.model,
      role: 'panelist',
      content: answer.content,
      parsedData: { ...answer.data },
      ...usageOfOutcome(outcome),
      participant: answer.participant,
    });
  }
  rows.push({
    stageType: `round_${round}_stats`,
    stageOrder: 2 * round,
    model: null,
    role: 'stats',
    content: describeStats(round, stats),
    parsedData: { round, type: 'stats', ...stats, converged },
    ...NO_USAGE,
  });

  const summaries: DelphiEstimateSummary[] = valid.map((a) => ({
    participantIndex: a.participant + 1,
    ...(numeric ? { estimate: a.data.estimate as number } : { answer: a.data.answer as string }),
    confidence: a.data.confidence,
    changed: a.data.changed,
  }));
  const events = [
    modeEvent(
      'round_complete',
      { round, data: { estimates: summaries, stats, converged } },
      `round_complete:${round}`,
    ),
  ];
  // The 600 s cap lets the current round finish, then goes straight to the report.
  const outOfTime = ctx.elapsedMs >= ctx.deliberationCapMs;
  if (converged) events.push(modeEvent('convergence_reached', { round, stats }));
  else if (round >= config.maxRounds || outOfTime)
    events.push(modeEvent('max_rounds_reached', { round, stats }));
  const next = converged || round >= config.maxRounds || outOfTime ? 'synthesis' : `round_${round + 1}`;
  return { rows, events, transition: { kind: 'next', stage: next } };
}

interface SynthesisInputs {
  rounds: { roundNumber: number; stats: Stats }[];
  converged: boolean;
  convergenceRound: number | null;
  finalValue: number | string;
  median?: number;
  confidenceInterval?: { low: number; high: number; level: 0.95 };
  participantCount: number;
}

/** Everything the report states, computed here from the stored rounds, never by the facilitator. */
function synthesisInputs(rows: readonly StageRow[]): SynthesisInputs {
  const total = completedRounds(rows);
  const rounds = Array.from({ length: total }, (_, i) => ({
    roundNumber: i + 1,
    stats: statsOnly(roundStats(rows, i + 1) as StoredStats),
  }));
  const last = roundStats(rows, total) as StoredStats;
  const lastStats = statsOnly(last);
  const convergedAt = rounds.find((r) => roundStats(rows, r.roundNumber)?.converged)?.roundNumber ?? null;
  const lastAnswers = roundAnswers(rows, total).filter((a) => valueOf(a.data) != null);
  if (isNumericStats(lastStats)) {
    const values = lastAnswers.map((a) => a.data.estimate as number);
    return {
      rounds,
      converged: last.converged,
      convergenceRound: convergedAt,
      finalValue: lastStats.mean,
      median: lastStats.median,
      confidenceInterval: confidenceInterval95(values),
      participantCount: lastAnswers.length,
    };
  }
  return {
    rounds,
    converged: last.converged,
    convergenceRound: convergedAt,
    finalValue: lastStats.mode,
    participantCount: lastAnswers.length,
  };
}

function reportOf(
  inputs: SynthesisInputs,
  row: { model: string; content: string; responseTimeMs: number },
): DelphiReport {
  return {
    facilitatorModel: row.model,
    report: row.content,
    totalRounds: inputs.rounds.length,
    converged: inputs.converged,
    finalValue: inputs.finalValue,
    responseTimeMs: row.responseTimeMs,
    ...(inputs.median !== undefined ? { median: inputs.median } : {}),
    ...(inputs.confidenceInterval ? { confidenceInterval: inputs.confidenceInterval } : {}),
  };
}

function reduceSynthesis(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const facilitator = outcomes[0];
  if (!facilitator?.ok) {
    return soleCallFailure(
      {
        role: 'facilitator',
        model: facilitator?.model ?? ctx.config.facilitatorModel,
        task: 'write the Delphi report',
        kept: 'The round data is saved.',
      },
      facilitator,
      ctx.attempts?.[FACILITATOR_KEY],
    );
  }
  const inputs = synthesisInputs(ctx.rows);
  const report = reportOf(inputs, facilitator);
  return {
    rows: [
      callRow('synthesis', SYNTHESIS_ORDER, 'facilitator', facilitator, {
        totalRounds: report.totalRounds,
        converged: report.converged,
        convergenceRound: inputs.convergenceRound,
        finalValue: report.finalValue,
      }),
    ],
    events: [modeEvent('synthesis_complete', { data: report })],
    transition: { kind: 'done', content: facilitator.content },
  };
}

function estimatesOf(answers: PanelistAnswer[]): DelphiEstimate[] {
  return answers
    .filter((a) => valueOf(a.data) != null)
    .map((a) =>
      a.data.type === 'numeric'
        ? {
            model: a.model,
            estimate: a.data.estimate as number,
            confidence: a.data.confidence,
            reasoning: a.data.reasoning,
            previousEstimate: a.data.previousEstimate ?? null,
            changed: a.data.changed,
            responseTimeMs: a.responseTimeMs,
          }
        : {
            model: a.model,
            answer: a.data.answer as string,
            confidence: a.data.confidence,
            reasoning: a.data.reasoning,
            previousAnswer: a.data.previousAnswer ?? null,
            changed: a.data.changed,
            responseTimeMs: a.responseTimeMs,
          },
    );
}

function planSynthesis(ctx: Ctx): PlannedCall[] {
  const inputs = synthesisInputs(ctx.rows);
  const prompt = buildDelphiSynthesisPrompt({
    userQuery: ctx.question,
    participantCount: inputs.participantCount,
    rounds: inputs.rounds,
    converged: inputs.converged,
    numeric: inputs.median !== undefined,
    finalValue: inputs.finalValue,
    median: inputs.median,
    confidenceInterval: inputs.confidenceInterval,
  });
  return [
    withFallbacks(
      promptCall(FACILITATOR_KEY, ctx.config.facilitatorModel, prompt),
      ctx.config.facilitatorFallbacks,
    ),
  ];
}

const stages: StageTable<DelphiStage, DelphiConfig> = {
  classify: {
    start: (ctx) => [
      // deviations.md 4: the override when given, else null until classify_complete
      openingEvent('delphi_start', ctx, { questionType: ctx.config.questionType }),
    ],
    calls: (ctx) =>
      needsClassificationCall(ctx.config)
        ? [promptCall(FACILITATOR_KEY, ctx.config.facilitatorModel, buildClassifyPrompt(ctx.question))]
        : [],
    reduce: (ctx, outcomes) => ({
      rows: [],
      events: [modeEvent('classify_complete', { data: classificationOf(ctx.config, outcomes[0]) })],
      transition: { kind: 'next', stage: 'round_1' },
    }),
  },
  round: {
    start: (_ctx, stage) => [
      modeEvent('round_start', { round: roundOf(stage) }, `round_start:${roundOf(stage)}`),
    ],
    calls: (ctx, stage) => planRound(roundOf(stage), ctx),
    // A panelist cut in round 1 is excluded; in a later round its previous answer carries (05-delphi.md §F).
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, DELPHI_MIN_VALID, readsEstimate(ctx)),
    reduce: (ctx, outcomes, stage) => reduceRound(roundOf(stage), ctx, outcomes),
  },
  synthesis: { start: () => [modeEvent('synthesis_start')], calls: planSynthesis, reduce: reduceSynthesis },
};

export const delphiMode = defineMode<DelphiConfig, Partial<DelphiResult>, DelphiStage>({
  mode: 'delphi',
  facts: delphiFacts,
  multiTurn: false,
  // Delphi handles the cap itself: the current round finishes, then the report is written.
  enforcesDeliberationCap: false,
  config: delphiConfig,
  firstStage: 'classify',
  stages,
  stageOf,

  titleCall: (ctx) => ({ model: ctx.config.facilitatorModel, messages: buildTitlePrompt(ctx.question) }),

  load(rows, _config, title) {
    const result: Partial<DelphiResult> = {};
    const classify = rows.find((r) => r.stageType === 'classify');
    if (classify) result.classification = classify.parsedData as unknown as DelphiClassification;
    const total = completedRounds(rows);
    if (total > 0) {
      result.rounds = Array.from({ length: total }, (_, i): DelphiRound => {
        const stored = roundStats(rows, i + 1) as StoredStats;
        return {
          roundNumber: i + 1,
          estimates: estimatesOf(roundAnswers(rows, i + 1)),
          stats: statsOnly(stored),
          converged: stored.converged,
        };
      });
    }
    const synthesis = rows.find((r) => r.stageType === 'synthesis');
    if (synthesis) {
      const inputs = synthesisInputs(rows);
      result.converged = inputs.converged;
      result.convergenceRound = inputs.convergenceRound;
      result.finalValue = inputs.finalValue;
      result.report = reportOf(inputs, {
        model: synthesis.model ?? '',
        content: synthesis.content,
        responseTimeMs: synthesis.responseTimeMs ?? 0,
      });
    }
    if (title) result.title = title;
    return result;
  },

  headline: (result) => ({
    answer: result.finalValue === undefined ? null : String(result.finalValue),
    details: {
      finalValue: result.finalValue ?? null,
      converged: result.converged ?? null,
      rounds: result.rounds?.length ?? 0,
      questionType: result.classification?.type ?? null,
    },
  }),
});

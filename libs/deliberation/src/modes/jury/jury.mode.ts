import {
  type ForemanReport,
  type JurorAssessment,
  type JurorSummary,
  type JuryConfig,
  type JuryResult,
} from '@conclave/contracts';
import { failure, modeEvent, usageOf } from '../../engine/reductions';
import type {
  CallOutcome,
  DeliberationContext,
  PlannedCall,
  StageReduction,
  StageRow,
  SuccessfulCall,
} from '../../engine/types';
import {
  answeredCalls,
  callRow,
  describeFailures,
  openingEvent,
  promptCall,
  recordRow,
  soleCallFailure,
} from '../../shared/calls';
import { memberGate, withFallbacks } from '../../engine/quorum';
import { defineMode, type StageTable } from '../define-mode';
import { JURY_MIN_SUCCESSFUL_JURORS, juryConfig } from './jury.config';
import { juryFacts } from './jury.facts';
import { parseForemanReport } from './jury.foreman';
import { parseJurorOutput } from './jury.parse';
import { buildEvaluationPrompt, buildForemanPrompt, buildJuryTitlePrompt } from './jury.prompts';
import { summarizeJurors } from './jury.verdict';

type Ctx = DeliberationContext<JuryConfig>;
type JuryStage = 'present' | 'deliberation' | 'verdict';

const ORDER = { present: 1, deliberation: 2, juror_summary: 3, verdict: 4 } as const;

export function assessJuror(call: SuccessfulCall, content: string): JurorAssessment {
  const parsed = parseJurorOutput(call.content, content);
  return {
    model: call.model,
    assessmentText: call.content,
    scores: parsed.scores,
    average: parsed.average,
    verdict: parsed.verdict,
    recommendations: parsed.recommendations,
    responseTimeMs: call.responseTimeMs,
    parseSuccess: parsed.parseSuccess,
  };
}

type JurorParsedData = Omit<JurorAssessment, 'model' | 'assessmentText' | 'responseTimeMs'>;

interface JurorSeat {
  /** 1-based position in the roster: tells apart two seats held by the same model. */
  seat: number;
  model: string;
  /** The model id for its first seat (as before duplicates were allowed), `model#seat` after that. */
  key: string;
}

export function jurorSeats(jurorModels: readonly string[]): JurorSeat[] {
  return jurorModels.map((model, i) => ({
    seat: i + 1,
    model,
    key: jurorModels.indexOf(model) === i ? model : `${model}#${i + 1}`,
  }));
}

function jurorsFromRows(rows: readonly StageRow[], config: JuryConfig): JurorAssessment[] {
  // Rows stored before seats were recorded have no participant: their roster position decides.
  const seatOf = (r: StageRow) => r.participant ?? config.jurorModels.indexOf(r.model ?? '') + 1;
  return rows
    .filter((r) => r.stageType === 'deliberation')
    .sort((a, b) => seatOf(a) - seatOf(b))
    .map((r) => {
      const data = (r.parsedData ?? {}) as unknown as JurorParsedData;
      return {
        model: r.model ?? '',
        assessmentText: r.content,
        scores: data.scores,
        average: data.average,
        verdict: data.verdict,
        recommendations: data.recommendations ?? [],
        responseTimeMs: r.responseTimeMs ?? 0,
        parseSuccess: data.parseSuccess,
      };
    });
}

const summaryFromRows = (rows: readonly StageRow[]): JurorSummary | undefined =>
  rows.find((r) => r.stageType === 'juror_summary')?.parsedData as JurorSummary | undefined;

function reducePresent(ctx: Ctx): StageReduction {
  const { content, originalQuestion } = ctx.config;
  return {
    rows: [recordRow('present', ORDER.present, content, originalQuestion ? { originalQuestion } : {})],
    events: [
      modeEvent('present_complete', { data: originalQuestion ? { content, originalQuestion } : { content } }),
    ],
    transition: { kind: 'next', stage: 'deliberation' },
  };
}

function reduceDeliberation(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const succeeded = answeredCalls(outcomes);
  const failedJurors = outcomes.flatMap((o) => (o.ok ? [] : [{ model: o.model, reason: o.error }]));
  if (succeeded.length === 0) return failure('All juror evaluations failed.');
  const jurors = succeeded.map((call) => assessJuror(call, ctx.config.content));
  const seats = new Map(jurorSeats(ctx.config.jurorModels).map((s) => [s.key, s.seat]));
  const jurorRows = succeeded.map((call, i): StageRow => {
    const { scores, average, verdict, recommendations, parseSuccess } = jurors[i];
    return {
      stageType: 'deliberation',
      stageOrder: ORDER.deliberation,
      model: call.model,
      participant: seats.get(call.key) ?? null,
      role: 'juror',
      content: call.content,
      parsedData: { scores, average, verdict, recommendations, parseSuccess },
      ...usageOf(call),
    };
  });
  if (succeeded.length < JURY_MIN_SUCCESSFUL_JURORS) {
    // The lone assessment was already delivered as juror_complete: keep it with the error.
    return {
      ...failure(
        `Only ${succeeded.length} juror evaluation succeeded (${succeeded[0].model}); ` +
          `at least ${JURY_MIN_SUCCESSFUL_JURORS} are needed for a verdict. Failed: ${describeFailures(outcomes)}.`,
      ),
      rows: jurorRows,
    };
  }
  const summary = summarizeJurors(jurors, failedJurors);
  const rows: StageRow[] = [
    ...jurorRows,
    recordRow(
      'juror_summary',
      ORDER.juror_summary,
      JSON.stringify({ majorityVerdict: summary.majorityVerdict, voteTally: summary.voteTally }),
      summary as unknown as Record<string, unknown>,
    ),
  ];
  return {
    rows,
    events: [modeEvent('all_jurors_complete', { data: summary })],
    transition: { kind: 'next', stage: 'verdict' },
  };
}

function reduceVerdict(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const foreman = outcomes[0];
  if (!foreman?.ok) {
    return soleCallFailure(
      {
        role: 'foreman',
        model: foreman?.model ?? ctx.config.foremanModel,
        task: 'deliver the verdict report',
        kept: 'The juror assessments and their summary are saved.',
      },
      foreman,
      ctx.attempts?.[ctx.config.foremanModel],
    );
  }
  const summary = summaryFromRows(ctx.rows);
  if (!summary) throw new Error('verdict stage reached without a juror summary');
  const report = parseForemanReport({
    model: foreman.model,
    text: foreman.content,
    content: ctx.config.content,
    summary,
    responseTimeMs: foreman.responseTimeMs,
  });
  const { model: _model, reportText: _text, responseTimeMs: _time, ...parsedData } = report;
  return {
    rows: [callRow('verdict', ORDER.verdict, 'foreman', foreman, parsedData)],
    events: [modeEvent('verdict_complete', { data: report })],
    transition: { kind: 'done', content: foreman.content },
  };
}

function planDeliberation(ctx: Ctx): PlannedCall[] {
  const prompt = buildEvaluationPrompt(ctx.config.content, ctx.config.originalQuestion);
  return jurorSeats(ctx.config.jurorModels).map(({ key, model }) => promptCall(key, model, prompt));
}

function planVerdict(ctx: Ctx): PlannedCall[] {
  const { config } = ctx;
  const jurors = jurorsFromRows(ctx.rows, config);
  const summary = summaryFromRows(ctx.rows);
  if (!summary) throw new Error('verdict stage reached without a juror summary');
  const prompt = buildForemanPrompt({
    content: config.content,
    originalQuestion: config.originalQuestion,
    assessments: jurors.map((j) => ({ model: j.model, assessment: j.assessmentText })),
    tally: summary.voteTally,
    majorityVerdict: summary.majorityVerdict,
    missingVerdicts: jurors.filter((j) => j.verdict === null).length,
  });
  return [
    withFallbacks(promptCall(config.foremanModel, config.foremanModel, prompt), config.foremanFallbacks),
  ];
}

const stages: StageTable<JuryStage, JuryConfig> = {
  present: {
    start: (ctx) => [openingEvent('jury_start', ctx, { mode: 'jury' }), modeEvent('present_start')],
    calls: () => [],
    reduce: reducePresent,
  },
  deliberation: {
    start: () => [modeEvent('deliberation_start')],
    calls: planDeliberation,
    // A juror counts when its verdict and scores parse (assessJuror's parseSuccess).
    gate: (ctx, calls) =>
      memberGate(
        ctx.config,
        calls.length,
        JURY_MIN_SUCCESSFUL_JURORS,
        (outcome) => assessJuror(outcome, ctx.config.content).parseSuccess,
      ),
    settled: (ctx, outcome) =>
      outcome.ok
        ? [
            modeEvent(
              'juror_complete',
              { data: assessJuror(outcome, ctx.config.content) },
              `juror_complete:${outcome.key}`,
            ),
          ]
        : [],
    reduce: reduceDeliberation,
  },
  verdict: { start: () => [modeEvent('verdict_start')], calls: planVerdict, reduce: reduceVerdict },
};

export const juryMode = defineMode<JuryConfig, Partial<JuryResult>, JuryStage>({
  mode: 'jury',
  facts: juryFacts,
  multiTurn: false,
  enforcesDeliberationCap: true,
  config: juryConfig,
  firstStage: 'present',
  stages,
  questionRequiredMessage: 'Content to evaluate is required',
  userContent: (_question, config) => config.content,

  titleCall: (ctx) => ({
    model: ctx.config.foremanModel,
    messages: buildJuryTitlePrompt(ctx.config.content),
  }),

  load(rows, config, title) {
    const result: Partial<JuryResult> = {};
    const present = rows.find((r) => r.stageType === 'present');
    if (present) {
      const originalQuestion = (present.parsedData as { originalQuestion?: string } | null)?.originalQuestion;
      result.presentation = originalQuestion
        ? { content: present.content, originalQuestion }
        : { content: present.content };
    }
    const jurors = jurorsFromRows(rows, config);
    if (jurors.length > 0) result.jurors = jurors;
    const summary = summaryFromRows(rows);
    if (summary) {
      result.jurorSummary = summary;
      result.majorityVerdict = summary.majorityVerdict;
      result.voteTally = summary.voteTally;
      result.dimensionAverages = summary.dimensionAverages;
    }
    const verdict = rows.find((r) => r.stageType === 'verdict');
    if (verdict) {
      const data = verdict.parsedData as unknown as Omit<
        ForemanReport,
        'model' | 'reportText' | 'responseTimeMs'
      >;
      result.foreman = {
        model: verdict.model ?? '',
        reportText: verdict.content,
        ...data,
        responseTimeMs: verdict.responseTimeMs ?? 0,
      };
    }
    if (title) result.title = title;
    return result;
  },

  headline: (result) => ({
    answer: result.foreman?.finalVerdict ?? result.majorityVerdict ?? null,
    details: {
      verdict: result.foreman?.finalVerdict ?? result.majorityVerdict ?? null,
      majorityVerdict: result.majorityVerdict ?? null,
      voteTally: result.voteTally ?? null,
      dimensionAverages: result.dimensionAverages ?? null,
    },
  }),
});

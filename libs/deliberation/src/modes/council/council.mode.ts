import type {
  CouncilConfig,
  CouncilResult,
  Stage1Response,
  Stage2Metadata,
  Stage2Response,
  Stage3Response,
} from '@conclave/contracts';
import type {
  CallOutcome,
  DeliberationContext,
  PlannedCall,
  StageReduction,
  StageRow,
} from '../../engine/types';
import { modeEvent } from '../../engine/reductions';
import { answersRoundCalls, reduceAnswersRound, type AnswersRound } from '../../shared/answers-round';
import {
  answeredCalls,
  callRow,
  openingEvent,
  promptCall,
  recordRow,
  soleCallFailure,
} from '../../shared/calls';
import { historyMessages } from '../../shared/history';
import { hasAnswer, memberGate, withFallbacks, type CountsAsAnswered } from '../../engine/quorum';
import { buildTitlePrompt } from '../../shared/title';
import { defineMode, type StageTable } from '../define-mode';
import { aggregateRankings, createLabelMap, describeAggregate } from './aggregate';
import { COUNCIL_MIN_RESPONSES, councilConfig } from './council.config';
import { councilFacts } from './council.facts';
import { buildRankingPrompt, buildSynthesisPrompt } from './council.prompts';
import { parseRanking } from './parse-ranking';

type Ctx = DeliberationContext<CouncilConfig>;
type CouncilStage = 'stage1' | 'stage2' | 'stage3';

const STAGE_ORDER = { stage1: 1, stage2_label_map: 2, stage2: 3, stage2_aggregate: 4, stage3: 5 } as const;

function byConfigOrder(models: readonly string[]) {
  return (a: { model: string | null }, b: { model: string | null }) =>
    models.indexOf(a.model ?? '') - models.indexOf(b.model ?? '');
}

function stage1Responses(rows: readonly StageRow[], config: CouncilConfig): Stage1Response[] {
  return rows
    .filter((r) => r.stageType === 'stage1')
    .sort(byConfigOrder(config.councilModels))
    .map((r) => ({ model: r.model ?? '', response: r.content, responseTimeMs: r.responseTimeMs ?? 0 }));
}

function stage2Responses(rows: readonly StageRow[], config: CouncilConfig): Stage2Response[] {
  return rows
    .filter((r) => r.stageType === 'stage2')
    .sort(byConfigOrder(config.councilModels))
    .map((r) => ({
      model: r.model ?? '',
      ranking: r.content,
      parsedRanking: ((r.parsedData ?? {}) as { parsedRanking?: string[] }).parsedRanking ?? [],
    }));
}

function stage2Metadata(rows: readonly StageRow[]): Stage2Metadata | undefined {
  const labelRow = rows.find((r) => r.stageType === 'stage2_label_map');
  const aggregateRow = rows.find((r) => r.stageType === 'stage2_aggregate');
  if (!labelRow || !aggregateRow) return undefined;
  return {
    labelToModel: (labelRow.parsedData ?? {}) as Record<string, string>,
    aggregateRankings: ((aggregateRow.parsedData ?? {}) as Pick<Stage2Metadata, 'aggregateRankings'>)
      .aggregateRankings,
  };
}

const STAGE1: AnswersRound = {
  stageType: 'stage1',
  stageOrder: STAGE_ORDER.stage1,
  seated: false,
  event: 'stage1_complete',
  next: 'stage2',
  minAnswers: COUNCIL_MIN_RESPONSES,
  panel: 'council models',
  need: `the council needs at least ${COUNCIL_MIN_RESPONSES} answers to rank`,
};

/** A ranking the aggregate can use: parseRanking reads at least one shown label from it. */
function readsRanking(ctx: Ctx): CountsAsAnswered {
  const shownLabels = Object.keys(createLabelMap(stage1Responses(ctx.rows, ctx.config).map((a) => a.model)));
  return (outcome) => parseRanking(outcome.content, shownLabels).labels.length > 0;
}

function planStage2(ctx: Ctx): PlannedCall[] {
  const answers = stage1Responses(ctx.rows, ctx.config);
  const labelMap = createLabelMap(answers.map((a) => a.model));
  const labeled = Object.keys(labelMap).map((label, i) => ({ label, response: answers[i].response }));
  const prompt = buildRankingPrompt(ctx.question, labeled);
  return ctx.config.councilModels.map((model) => promptCall(model, model, prompt));
}

function planStage3(ctx: Ctx): PlannedCall[] {
  const { config, question } = ctx;
  const prompt = buildSynthesisPrompt(
    question,
    stage1Responses(ctx.rows, config),
    stage2Responses(ctx.rows, config),
  );
  const model = config.chairmanModel;
  return [
    withFallbacks(promptCall(model, model, prompt, historyMessages(ctx.history)), config.chairmanFallbacks),
  ];
}

function reduceStage2(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const answers = stage1Responses(ctx.rows, ctx.config);
  const labelToModel = createLabelMap(answers.map((a) => a.model));
  const shownLabels = Object.keys(labelToModel);
  const evaluations = answeredCalls(outcomes).map((call) => ({
    call,
    parsed: parseRanking(call.content, shownLabels),
  }));
  const aggregate = aggregateRankings(
    evaluations.map((e) => e.parsed.labels).filter((labels) => labels.length > 0),
    labelToModel,
  );
  const rows: StageRow[] = [
    recordRow('stage2_label_map', STAGE_ORDER.stage2_label_map, JSON.stringify(labelToModel), labelToModel),
    ...evaluations.map(({ call, parsed }) =>
      callRow('stage2', STAGE_ORDER.stage2, 'evaluator', call, {
        parsedRanking: parsed.labels,
        parseSuccess: parsed.labels.length > 0,
      }),
    ),
    recordRow('stage2_aggregate', STAGE_ORDER.stage2_aggregate, describeAggregate(aggregate), {
      aggregateRankings: aggregate,
    }),
  ];
  const data: Stage2Response[] = evaluations.map(({ call, parsed }) => ({
    model: call.model,
    ranking: call.content,
    parsedRanking: parsed.labels,
  }));
  const metadata: Stage2Metadata = { labelToModel, aggregateRankings: aggregate };
  return {
    rows,
    events: [modeEvent('stage2_complete', { data, metadata })],
    transition: { kind: 'next', stage: 'stage3' },
  };
}

function reduceStage3(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const chairman = outcomes[0];
  if (!chairman?.ok) {
    return soleCallFailure(
      {
        role: 'chairman',
        model: chairman?.model ?? ctx.config.chairmanModel,
        task: 'synthesize',
        kept: 'The council answers and rankings are saved.',
      },
      chairman,
      ctx.attempts?.[ctx.config.chairmanModel],
    );
  }
  const data: Stage3Response = {
    model: chairman.model,
    response: chairman.content,
    responseTimeMs: chairman.responseTimeMs,
  };
  return {
    rows: [callRow('stage3', STAGE_ORDER.stage3, 'chairman', chairman, {})],
    events: [modeEvent('stage3_complete', { data })],
    transition: { kind: 'done', content: chairman.content },
  };
}

const stages: StageTable<CouncilStage, CouncilConfig> = {
  stage1: {
    start: (ctx) => [openingEvent('stage1_start', ctx)],
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, COUNCIL_MIN_RESPONSES, hasAnswer),
    calls: (ctx) =>
      answersRoundCalls(STAGE1, ctx.config.councilModels, ctx.question, historyMessages(ctx.history)),
    reduce: (_ctx, outcomes) => reduceAnswersRound(STAGE1, outcomes),
  },
  stage2: {
    start: () => [modeEvent('stage2_start')],
    calls: planStage2,
    // Rankings that are missing leave fewer to aggregate (01-council.md §F); one is enough to go on.
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, 1, readsRanking(ctx)),
    reduce: reduceStage2,
  },
  stage3: { start: () => [modeEvent('stage3_start')], calls: planStage3, reduce: reduceStage3 },
};

export const councilMode = defineMode<CouncilConfig, Partial<CouncilResult>, CouncilStage>({
  mode: 'council',
  facts: councilFacts,
  multiTurn: true,
  enforcesDeliberationCap: false,
  config: councilConfig,
  firstStage: 'stage1',
  stages,

  titleCall: (ctx) => ({ model: ctx.config.chairmanModel, messages: buildTitlePrompt(ctx.question) }),

  load(rows, config, title) {
    const result: Partial<CouncilResult> = {};
    if (rows.some((r) => r.stageType === 'stage1')) result.stage1 = stage1Responses(rows, config);
    const metadata = stage2Metadata(rows);
    if (metadata) {
      result.stage2 = stage2Responses(rows, config);
      result.stage2Metadata = metadata;
    }
    const synthesis = rows.find((r) => r.stageType === 'stage3');
    if (synthesis) {
      result.stage3 = {
        model: synthesis.model ?? '',
        response: synthesis.content,
        responseTimeMs: synthesis.responseTimeMs ?? 0,
      };
    }
    if (title) result.title = title;
    return result;
  },

  headline: (result) => ({
    answer: result.stage3?.response ?? null,
    details: { aggregateRankings: result.stage2Metadata?.aggregateRankings ?? null },
  }),
});

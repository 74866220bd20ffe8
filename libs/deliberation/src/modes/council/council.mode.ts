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
  ModeDefinition,
  PlannedCall,
  StageReduction,
  StageRow,
  SuccessfulCall,
} from '../../engine/types';
import { failure, modeEvent, NO_USAGE, usageOf } from '../../engine/reductions';
import { historyMessages } from '../../shared/history';
import { buildTitlePrompt } from '../../shared/title';
import { aggregateRankings, createLabelMap, describeAggregate } from './aggregate';
import {
  COUNCIL_MAX_MODELS,
  COUNCIL_MIN_MODELS,
  CouncilConfigDto,
  resolveCouncilConfig,
} from './council.config';
import { buildRankingPrompt, buildSynthesisPrompt } from './council.prompts';
import { parseRanking } from './parse-ranking';

type Ctx = DeliberationContext<CouncilConfig>;

const STAGE_ORDER = { stage1: 1, stage2_label_map: 2, stage2: 3, stage2_aggregate: 4, stage3: 5 } as const;
const MIN_RESPONSES = 2;

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

function describeFailures(outcomes: readonly CallOutcome[]): string {
  return outcomes
    .filter((o) => !o.ok)
    .map((o) => `${o.model} (${o.ok ? '' : o.error})`)
    .join(', ');
}

function planStage(stage: string, ctx: Ctx): PlannedCall[] {
  const { config, question } = ctx;
  const history = historyMessages(ctx.history);
  switch (stage) {
    case 'stage1':
      return config.councilModels.map((model) => ({
        key: model,
        participant: model,
        model,
        messages: [...history, { role: 'user', content: question }],
      }));
    case 'stage2': {
      const answers = stage1Responses(ctx.rows, config);
      const labelMap = createLabelMap(answers.map((a) => a.model));
      const labeled = Object.keys(labelMap).map((label, i) => ({ label, response: answers[i].response }));
      const prompt = buildRankingPrompt(question, labeled);
      return config.councilModels.map((model) => ({
        key: model,
        participant: model,
        model,
        messages: [{ role: 'user', content: prompt }],
      }));
    }
    case 'stage3': {
      const prompt = buildSynthesisPrompt(
        question,
        stage1Responses(ctx.rows, config),
        stage2Responses(ctx.rows, config),
      );
      const model = config.chairmanModel;
      return [
        { key: model, participant: model, model, messages: [...history, { role: 'user', content: prompt }] },
      ];
    }
    default:
      throw new Error(`council has no stage "${stage}"`);
  }
}

function reduceStage1(outcomes: CallOutcome[]): StageReduction {
  const answered = outcomes.filter((o): o is SuccessfulCall => o.ok);
  if (answered.length === 0) {
    return failure(`All council models failed to answer: ${describeFailures(outcomes)}.`);
  }
  if (answered.length < MIN_RESPONSES) {
    return failure(
      `Only ${answered[0].model} answered; the council needs at least ${MIN_RESPONSES} answers to rank. ` +
        `Failed: ${describeFailures(outcomes)}.`,
    );
  }
  const rows: StageRow[] = answered.map((call) => ({
    stageType: 'stage1',
    stageOrder: STAGE_ORDER.stage1,
    model: call.model,
    role: 'respondent',
    content: call.content,
    parsedData: {},
    ...usageOf(call),
  }));
  const data: Stage1Response[] = answered.map((c) => ({
    model: c.model,
    response: c.content,
    responseTimeMs: c.responseTimeMs,
  }));
  return {
    rows,
    events: [modeEvent('stage1_complete', { data })],
    transition: { kind: 'next', stage: 'stage2' },
  };
}

function reduceStage2(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const answers = stage1Responses(ctx.rows, ctx.config);
  const labelToModel = createLabelMap(answers.map((a) => a.model));
  const shownLabels = Object.keys(labelToModel);
  const evaluations = outcomes
    .filter((o): o is SuccessfulCall => o.ok)
    .map((call) => ({ call, parsed: parseRanking(call.content, shownLabels) }));
  const aggregate = aggregateRankings(
    evaluations.map((e) => e.parsed.labels).filter((labels) => labels.length > 0),
    labelToModel,
  );
  const rows: StageRow[] = [
    {
      stageType: 'stage2_label_map',
      stageOrder: STAGE_ORDER.stage2_label_map,
      model: null,
      role: null,
      content: JSON.stringify(labelToModel),
      parsedData: labelToModel,
      ...NO_USAGE,
    },
    ...evaluations.map(({ call, parsed }): StageRow => ({
      stageType: 'stage2',
      stageOrder: STAGE_ORDER.stage2,
      model: call.model,
      role: 'evaluator',
      content: call.content,
      parsedData: { parsedRanking: parsed.labels, parseSuccess: parsed.labels.length > 0 },
      ...usageOf(call),
    })),
    {
      stageType: 'stage2_aggregate',
      stageOrder: STAGE_ORDER.stage2_aggregate,
      model: null,
      role: null,
      content: describeAggregate(aggregate),
      parsedData: { aggregateRankings: aggregate },
      ...NO_USAGE,
    },
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
  if (!chairman || !chairman.ok) {
    const reason = chairman && !chairman.ok ? chairman.error : 'no answer';
    return failure(
      `The chairman model ${ctx.config.chairmanModel} failed to synthesize (${reason}). ` +
        'The council answers and rankings are saved.',
    );
  }
  const data: Stage3Response = {
    model: chairman.model,
    response: chairman.content,
    responseTimeMs: chairman.responseTimeMs,
  };
  return {
    rows: [
      {
        stageType: 'stage3',
        stageOrder: STAGE_ORDER.stage3,
        model: chairman.model,
        role: 'chairman',
        content: chairman.content,
        parsedData: {},
        ...usageOf(chairman),
      },
    ],
    events: [modeEvent('stage3_complete', { data })],
    transition: { kind: 'done', content: chairman.content },
  };
}

export const councilMode: ModeDefinition<CouncilConfig, Partial<CouncilResult>> = {
  mode: 'council',
  multiTurn: true,
  enforcesDeliberationCap: false,
  firstStage: 'stage1',
  configSchema: CouncilConfigDto,
  resolveConfig: resolveCouncilConfig,
  timeoutMs: (config) => config.timeoutMs,

  startEvents(stage, ctx) {
    if (stage === 'stage1') {
      return [modeEvent('stage1_start', { conversationId: ctx.conversationId, messageId: ctx.messageId })];
    }
    return [modeEvent(`${stage}_start`)];
  },

  plan: planStage,

  reduce(stage, ctx, outcomes) {
    if (stage === 'stage1') return reduceStage1(outcomes);
    if (stage === 'stage2') return reduceStage2(ctx, outcomes);
    if (stage === 'stage3') return reduceStage3(ctx, outcomes);
    throw new Error(`council has no stage "${stage}"`);
  },

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

  describe(defaults) {
    return {
      mode: 'council',
      available: true,
      multiTurn: true,
      roster: [
        { role: 'council', field: 'councilModels', min: COUNCIL_MIN_MODELS, max: COUNCIL_MAX_MODELS },
        { role: 'chairman', field: 'chairmanModel', min: 1, max: 1 },
      ],
      defaults: {
        councilModels: defaults.council.councilModels,
        chairmanModel: defaults.council.chairmanModel,
        timeoutMs: defaults.timeoutMs,
      },
      options: [
        {
          field: 'timeoutMs',
          type: 'integer',
          description: 'per-call timeout (1000-600000 ms)',
          default: defaults.timeoutMs,
        },
      ],
    };
  },
};

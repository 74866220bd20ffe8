import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  isUuid,
  type BatchEstimate,
  type DeliberationEstimate,
  type EstimatePricing,
  type EstimateRange,
  type ModeName,
} from '@conclave/contracts';
import {
  ESTIMATE_ASSUMPTIONS,
  ShapePlanner,
  addFigures,
  durationBound,
  figuresOfPlan,
  planDeliberation,
  rangeOf,
  variableStages,
  type HistoryTurn,
  type ModelPrice,
  type PlanFigures,
} from '@conclave/deliberation';
import { ConversationsRepository } from '@conclave/persistence';
import { CONFIG } from '@conclave/platform';
import { BudgetsService } from '../budgets/budgets.service';
import { ApiError } from '../common/api-error';
import type { ValidatedRequest } from '../deliberations/request-validator';
import { ModelsService } from '../models/models.service';

/** As many earlier turns as a worker loads for a follow-up (apps/worker HISTORY_LOAD_LIMIT). */
const HISTORY_TURNS = 50;

const FREE: EstimatePricing = {
  promptPerMillionUsd: 0,
  completionPerMillionUsd: 0,
  source: 'simulated',
};

/**
 * `dryRun=true`: the calls a request would make and what they would cost, from the mode's own
 * plan (@conclave/deliberation's planner) and the model catalogue's prices. Stores nothing,
 * enqueues nothing.
 */
@Injectable()
export class DryRunService {
  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly models: ModelsService,
    private readonly budgets: BudgetsService,
    private readonly conversations: ConversationsRepository,
  ) {}

  /** Each model's price: zero for simulated ids, the catalogue's per million tokens, or unknown and why. */
  async prices(): Promise<(model: string) => ModelPrice> {
    if (!this.config.realProviderConfigured) {
      const note = 'No real provider is configured: every model is answered by the simulator, at no cost.';
      return () => ({ known: true, pricing: FREE, note });
    }
    const list = await this.models.list();
    const byId = new Map(list.models.map((m) => [m.id, m]));
    // Every id that is not sim/… goes to OpenRouter when its key is set, else to the OpenAI-compatible server.
    const source = this.config.modelCatalogue.openrouter ? 'openrouter' : 'openai-compatible';
    const status = list.sources.find((s) => s.provider === source);
    return (model) => {
      if (model.startsWith('sim/'))
        return { known: true, pricing: FREE, note: 'A simulated model: no cost.' };
      const entry = byId.get(model);
      if (entry?.pricing) {
        return { known: true, pricing: { ...entry.pricing, source: entry.provider }, note: null };
      }
      if (!entry && status?.error && status.count === 0) {
        return {
          known: false,
          note: `Price unknown: the ${source} model list could not be fetched (${status.error}).`,
        };
      }
      if (!entry)
        return { known: false, note: `Price unknown: ${model} is not in the ${source} model list.` };
      return {
        known: false,
        note:
          source === 'openai-compatible'
            ? "Price unknown: the OpenAI-compatible server's model list gives no prices."
            : `Price unknown: the ${source} model list gives no price for ${model}.`,
      };
    };
  }

  /** POST /api/deliberations?dryRun=true, for a request already validated. */
  async deliberation(userId: string, request: ValidatedRequest): Promise<DeliberationEstimate> {
    const { history, isNew } = await this.followUp(userId, request);
    const plan = planDeliberation(request.definition, {
      question: request.question,
      config: request.config,
      history,
      title: isNew,
    });
    const figures = figuresOfPlan(plan, await this.prices());
    return {
      dryRun: true,
      mode: request.mode,
      ...figures,
      titleCall: { counted: isNew, model: plan.titleModel },
      variable: variableStages(figures),
      duration: durationBound(request.definition, request.config, plan, this.config.deliberationCapMs),
      assumptions: ESTIMATE_ASSUMPTIONS,
      budget: await this.budgets.status(userId),
    };
  }

  /**
   * What a follow-up's admission would say (the real request decides under the conversation's row
   * lock; this reads the same state without one), and the history its prompts would carry.
   */
  private async followUp(
    userId: string,
    request: ValidatedRequest,
  ): Promise<{ history: HistoryTurn[]; isNew: boolean }> {
    const { conversationId } = request;
    if (!conversationId) return { history: [], isNew: true };
    const conversation = isUuid(conversationId)
      ? await this.conversations.owned(userId, conversationId)
      : null;
    if (!conversation) throw ApiError.notFound(`conversation ${conversationId}`);
    if (conversation.mode !== request.mode) {
      throw ApiError.invalid({
        mode: `conversation ${conversationId} is a ${conversation.mode} conversation; a follow-up cannot switch to ${request.mode}`,
      });
    }
    const messages = await this.conversations.messages(conversationId);
    if (messages.length > 0 && !request.definition.multiTurn) {
      throw ApiError.invalid({
        conversationId: `${request.mode} is single-turn: conversation ${conversationId} already has messages`,
      });
    }
    if (messages.some((m) => m.role === 'assistant' && (m.status === 'queued' || m.status === 'running'))) {
      throw new ApiError(
        409,
        `conversation ${conversationId} is still deliberating; send the follow-up once it has finished`,
      );
    }
    const history: HistoryTurn[] = [];
    for (const answer of messages) {
      if (answer.role !== 'assistant' || answer.status !== 'complete') continue;
      const question = messages.find((m) => m.role === 'user' && m.turn === answer.turn);
      if (question) history.push({ question: question.content, answer: answer.content });
    }
    return { history: history.slice(-HISTORY_TURNS), isNew: false };
  }

  /** POST /api/batches?dryRun=true, for items already validated. */
  async batch(
    userId: string,
    requests: ValidatedRequest[],
    options: { generateTitles: boolean; maxCostUsd: number | null },
  ): Promise<BatchEstimate> {
    const price = await this.prices();
    const planner = new ShapePlanner();
    const byMode: Partial<Record<ModeName, number>> = {};
    let total: PlanFigures | null = null;
    let perItem: {
      calls: EstimateRange;
      promptTokens: EstimateRange;
      completionTokens: EstimateRange;
      costUsd: EstimateRange | null;
    } | null = null;
    const widen = (a: EstimateRange, b: EstimateRange) =>
      rangeOf(Math.min(a.min, b.min), Math.max(a.max, b.max));
    for (const request of requests) {
      byMode[request.mode] = (byMode[request.mode] ?? 0) + 1;
      const plan = planner.plan(request.definition, {
        question: request.question,
        config: request.config,
        title: options.generateTitles,
      });
      const item = figuresOfPlan(plan, price, (stage) => `${request.mode}.${stage}`);
      total = addFigures(total, item);
      perItem = perItem
        ? {
            calls: widen(perItem.calls, item.calls),
            promptTokens: widen(perItem.promptTokens, item.promptTokens),
            completionTokens: widen(perItem.completionTokens, item.completionTokens),
            costUsd: perItem.costUsd && item.costUsd ? widen(perItem.costUsd, item.costUsd) : null,
          }
        : {
            calls: item.calls,
            promptTokens: item.promptTokens,
            completionTokens: item.completionTokens,
            costUsd: item.costUsd,
          };
    }
    if (!total || !perItem) throw new Error('a batch has at least one item');
    const { maxCostUsd } = options;
    let withinBudget: BatchEstimate['withinBudget'] = null;
    if (maxCostUsd !== null) {
      if (!total.costUsd) withinBudget = 'unknown';
      else if (total.costUsd.max < maxCostUsd) withinBudget = 'yes';
      else if (total.costUsd.min >= maxCostUsd) withinBudget = 'no';
      else withinBudget = 'maybe';
    }
    return {
      dryRun: true,
      total: requests.length,
      byMode,
      titleCalls: options.generateTitles,
      ...total,
      perItem,
      maxCostUsd,
      withinBudget,
      variable: variableStages(total),
      assumptions: ESTIMATE_ASSUMPTIONS,
      budget: await this.budgets.status(userId),
    };
  }
}

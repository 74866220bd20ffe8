import type { ModeName } from './modes';
import type { ModelSource } from './models';

/**
 * Cost before and during (issue 21): what `?dryRun=true` on `POST /api/deliberations` and
 * `POST /api/batches` answers, and the budgets that stop spending.
 */

/** An inclusive range; `min === max` when the count is exact. */
export interface EstimateRange {
  min: number;
  max: number;
}

/** A model's price as the estimate used it, in US dollars per million tokens. */
export interface EstimatePricing {
  promptPerMillionUsd: number;
  completionPerMillionUsd: number;
  /** Where the price comes from: `simulated` is always zero. */
  source: ModelSource;
}

/** One model of the roster: the calls it would make, per stage, and what they would cost. */
export interface ModelCallEstimate {
  model: string;
  calls: EstimateRange;
  /** Calls per stage (`title` when the title call is counted); a batch keys them `mode.stage`. */
  stages: Record<string, EstimateRange>;
  promptTokens: EstimateRange;
  completionTokens: EstimateRange;
  /** Null when the price is unknown; `pricingNote` then says why. */
  pricing: EstimatePricing | null;
  /** Why the price is unknown, or zero; null for a catalogue price. */
  pricingNote: string | null;
  /** Null when the price is unknown. */
  costUsd: EstimateRange | null;
}

/** How the token figures were estimated (README, "Cost before and during"). */
export interface EstimateAssumptions {
  /** Prompt tokens = characters of the prompt text ÷ this. */
  charsPerToken: number;
  /**
   * Completion tokens assumed per call of a model that is not simulated (and per earlier answer a
   * later prompt quotes): the least (1) is a bound, the most an estimate (no output cap is set).
   */
  completionTokensPerCall: EstimateRange;
  /** Completion tokens assumed for the title call of a model that is not simulated (an estimate). */
  titleCompletionTokens: EstimateRange;
  /**
   * Simulated models (`sim/…`, issue 36): their tokens come from the simulated answers themselves,
   * widened by these fractions; `measured` is what the margins were checked on.
   */
  simulated?: {
    completionMargin: number;
    promptMargin: number;
    measured: {
      /** Simulated deliberations (every mode, agreeing and divided panels) compared with their estimate. */
      deliberations: number;
      /** The largest miss of the unwidened figures, as a fraction of the figure. */
      promptTokensError: number;
      completionTokensError: number;
      /** How many of them fell outside the widened ranges. */
      outsideRange: number;
      /**
       * Batch dry runs (items planned by shape, with stand-in texts): simulated batches of every
       * mode and their items, each run, and how many items or totals fell outside their ranges.
       */
      batches?: { batches: number; items: number; outsideRange: number };
    };
  };
  notes: string[];
}

/** The user's monthly budget as it stands (null when no budget is set). */
export interface UserBudgetStatus {
  monthlyBudgetUsd: number;
  /** Recorded cost of the user's model calls this calendar month (UTC). */
  spentThisMonthUsd: number;
  /** The real request would be refused with 402 now. */
  overBudget: boolean;
}

/** What a plan adds up to, per stage and per model, as ranges over its walks. */
export interface EstimateFigures {
  /** Every model call, the title call included when `titleCall.counted`. */
  calls: EstimateRange;
  stages: Record<string, EstimateRange>;
  models: ModelCallEstimate[];
  promptTokens: EstimateRange;
  completionTokens: EstimateRange;
  /** Null when any model's price is unknown (see `unpricedModels`); `knownCostUsd` then covers the rest. */
  costUsd: EstimateRange | null;
  knownCostUsd: EstimateRange;
  unpricedModels: string[];
}

interface CallTotals extends EstimateFigures {
  assumptions: EstimateAssumptions;
  budget: UserBudgetStatus | null;
}

/**
 * How long a deliberation's model calls may take (issue 32): the bound every call's timeout sets,
 * and the bound when each stage of members has the mode's minimum by its `stageDeadlineMs`.
 */
export interface DurationEstimate {
  maxMs: number;
  /** Null when the request sets no stage deadline. */
  withDeadlinesMs: number | null;
  perCallTimeoutMs: number;
  /** The whole-deliberation cap the bound is held under; null for a mode without one (council). */
  capMs: number | null;
}

/** `POST /api/deliberations?dryRun=true`: 200, nothing stored or enqueued. */
export interface DeliberationEstimate extends CallTotals {
  dryRun: true;
  mode: ModeName;
  /** The title call a new conversation makes; counted in `calls` when `counted`. */
  titleCall: { counted: boolean; model: string | null };
  /** Stages whose number of calls depends on the answers (Delphi's rounds, vote's tiebreak), worded. */
  variable: string[];
  /** How long its model calls may take (an extension, issue 32). */
  duration?: DurationEstimate;
}

/** `POST /api/batches?dryRun=true`: 200, nothing stored or enqueued. */
export interface BatchEstimate extends CallTotals {
  dryRun: true;
  /** Items in the batch. */
  total: number;
  byMode: Partial<Record<ModeName, number>>;
  /** Whether each item's title call is counted (the batch's `generateTitles`). */
  titleCalls: boolean;
  /** The least any item would cost and the most any would (calls, tokens, dollars). */
  perItem: {
    calls: EstimateRange;
    promptTokens: EstimateRange;
    completionTokens: EstimateRange;
    costUsd: EstimateRange | null;
  };
  /** The batch's `maxCostUsd`, and whether the estimate fits under it. */
  maxCostUsd: number | null;
  withinBudget: 'yes' | 'no' | 'maybe' | 'unknown' | null;
  variable: string[];
}

/** `PUT /api/admin/users/:name/budget`'s answer. */
export interface UserBudgetView {
  user: string;
  /** Null: no monthly budget. */
  monthlyBudgetUsd: number | null;
  spentThisMonthUsd: number;
}

/** `POST /api/batches/:id/retry-failed`'s answer. */
export interface BatchRetryAccepted {
  batchId: string;
  /** Items given a new attempt. */
  retried: number;
  /** The batch runs again (it finishes, and says `batch_complete`, once more). */
  status: 'running';
}
